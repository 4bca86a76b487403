package client

// The limits of one push (the spec's, for every form of push): checked by
// the server, and worth checking before sending.
const (
	// MaxFilesPerPush is the most files one commit may hold.
	MaxFilesPerPush = 500
	// MaxFileBytes is the largest file.
	MaxFileBytes = 10 << 20
	// MaxPushBytes is the most bytes of files one push may carry.
	MaxPushBytes = 25 << 20
)
