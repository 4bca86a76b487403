package memory

import "github.com/svcplatform/platform/controlplane/auth"

// The permission-table operations of the area's routes: reading stores and
// their keys is open to viewers of the project and to read-only keys;
// creating and deleting stores and putting and deleting keys needs a
// developer with write access (a key of the project, not a read-only one).
// A store's project is known once it is loaded, so the service checks the
// table again with it.
var (
	// OpRead reads stores, keys and values, and lists keys.
	OpRead = auth.OpMemoryRead
	// OpWrite creates and deletes stores, and puts and deletes keys.
	OpWrite = auth.OpMemoryWrite
)
