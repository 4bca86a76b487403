-- Repos: finding the files a workspace already holds by their SHA-256
-- (the manifest push and POST /api/repos/{id}/blobs/missing).
CREATE INDEX repo_files_sha256 ON repo_files(sha256);
