// Package scaletest holds the multi-process proof of the scale-out setup
// (issue 20): one PostgreSQL (Debian's postgresql package, started by
// controlplane/store/pgtest), two `platform controlplane` replicas sharing
// it, a seal key and a blob directory, and two `platform edge` processes,
// one pulling from each replica. The test builds the platform binary once
// and drives the processes over their real sockets; see README.md.
package scaletest
