package blobs

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// OpenBackend opens the blob backend a location names, the value of
// `platform --blobs` (env PLATFORM_BLOBS):
//
//   - a directory path, or file:///abs/path: the file store (Open);
//   - s3://BUCKET/PREFIX?endpoint=...: an S3 bucket (ParseS3URL, NewS3),
//     credentials from the AWS environment and files.
//
// An S3 location is checked against the server before OpenBackend returns.
func OpenBackend(ctx context.Context, location string) (Backend, error) {
	scheme, _, found := strings.Cut(location, "://")
	switch {
	case location == "":
		return nil, fmt.Errorf("%w: empty location", ErrBadLocation)
	case !found:
		return Open(location)
	case scheme == "file":
		u, err := url.Parse(location)
		if err != nil || u.Host != "" || u.Path == "" || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("%w: want file:///absolute/path", ErrBadLocation)
		}
		return Open(u.Path)
	case scheme == "s3":
		cfg, err := ParseS3URL(location)
		if err != nil {
			return nil, err
		}
		return NewS3(ctx, cfg)
	default:
		return nil, fmt.Errorf("%w: unknown scheme %q (want a path, file:// or s3://)", ErrBadLocation, scheme)
	}
}
