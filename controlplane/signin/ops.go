package signin

import "github.com/svcplatform/platform/controlplane/auth"

// The permission-table operations of the management routes: reading pools
// is open to viewers of the project, changing pools and their users needs a
// developer with write access, and reading users' e-mail addresses needs a
// developer with a full-access credential, as environment values do.
var (
	// OpRead reads pools, their settings and public keys.
	OpRead = auth.OpAuthPoolRead
	// OpWrite creates, changes and deletes pools, rotates their keys, and
	// disables, unlocks and deletes their users.
	OpWrite = auth.OpAuthPoolWrite
	// OpUsersRead lists and reads a pool's users.
	OpUsersRead = auth.OpAuthUserRead
)
