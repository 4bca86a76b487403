package blobs

import "github.com/minio/minio-go/v7"

// ClientOf exposes the S3 client to the external tests, which look at what
// the server stored.
func ClientOf(s *S3) (*minio.Client, string) { return s.client, s.cfg.Bucket }
