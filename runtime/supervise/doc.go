// Package supervise runs server apps and worker programs: it starts a
// deployment's process in a sandbox with exactly the project's variables
// plus SERVICE_PROJECT_ID and PORT, keeps its output in a bounded log,
// health-checks it, restarts it with exponential backoff when it dies,
// switches a project to a new deployment only once it is healthy (the old
// one drains, then stops), stops idle apps (scale to zero) and wakes them
// on the next connection or Wake call.
//
// Every app has a stable front address on the host's loopback (Addr) that
// the edge forwards to: the supervisor accepts there, wakes the app if it
// sleeps, counts the connection for idleness and draining, and splices it
// to the process's port.
package supervise
