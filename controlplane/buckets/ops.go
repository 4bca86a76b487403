package buckets

import "github.com/svcplatform/platform/controlplane/auth"

// The permission table's operations the area's routes name. Buckets, the
// objects' names and sizes and the access keys (never their secrets) are
// read like the project (viewers); changing them changes the project
// (developers and above, project keys of the project, not read-only keys).
// Reading the bytes of objects, or minting a signed URL that hands them
// out, is reading the project's data: developers and above with a
// full-access key, as environment values are.
var (
	// OpRead lists and reads buckets, object listings and metadata, and
	// access keys.
	OpRead = auth.OpBucketRead
	// OpWrite creates, changes and deletes buckets, objects, uploads and
	// access keys.
	OpWrite = auth.OpBucketWrite
	// OpData reads objects' bytes and signs URLs for them.
	OpData = auth.OpBucketData
)
