package signin

import "github.com/svcplatform/platform/controlplane/auth"

// The permission-table operations of the management routes. Each is the
// table row whose rule is the one the area needs: reading pools is open to
// viewers of the project (project.read), changing pools and their users
// needs a developer with write access (project.update), and reading users'
// e-mail addresses needs a developer with a full-access credential
// (env.read), as environment values do.
var (
	// OpRead reads pools, their settings and public keys.
	OpRead = auth.OpProjectRead
	// OpWrite creates, changes and deletes pools, rotates their keys, and
	// disables, unlocks and deletes their users.
	OpWrite = auth.OpProjectUpdate
	// OpUsersRead lists and reads a pool's users.
	OpUsersRead = auth.OpEnvRead
)
