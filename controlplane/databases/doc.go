// Package databases is the databases area: every database is its own SQLite
// file under DATA/databases, reached only through HTTPS with an API key.
// It creates and removes databases within the plan's count, runs queries
// and batches as one transaction each under the specification's limits
// (SQLite's own sqlite3_limit where SQLite has one, the service's
// elsewhere), holds statements that add data when the storage allowance is
// used up, limits each workspace's query rate, meters queries and rows,
// and exports a database as a .sql dump. Among several control-plane
// replicas each database lives on the node that created it, and requests
// reaching another replica are forwarded there (cluster.go,
// controlplane/placement). See README.md.
package databases
