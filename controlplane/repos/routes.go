package repos

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table. Repos are workspace-wide:
// a key limited to a project is refused by the permission table.
//
// The push row's Request documents the JSON body and RequestBodies the
// archive and multipart forms, told apart by Content-Type (see
// Handlers.Push).
func Routes(h Handlers) []api.Route {
	const G, P, D = http.MethodGet, http.MethodPost, http.MethodDelete
	return []api.Route{
		{Method: G, Path: "/api/repos", Op: auth.OpRepoRead, Handler: h.List, Summary: "List repos with commit counts", Response: RepoList{}},
		{Method: P, Path: "/api/repos", Op: auth.OpRepoWrite, Handler: h.Create, Status: 201, Summary: "Create a repo", Request: CreateRequest{}, Response: RepoAnswer{}},
		{Method: G, Path: "/api/repos/{id}", Op: auth.OpRepoRead, Handler: h.Read, Summary: "Read a repo and its commit history", Response: Detail{}},
		{Method: D, Path: "/api/repos/{id}", Op: auth.OpRepoWrite, Handler: h.Delete, Summary: "Delete a repo (its deployments keep serving)", Response: api.Deleted{}},
		{Method: P, Path: "/api/repos/{id}/commits", Op: auth.OpRepoWrite, Handler: h.Push, Status: 201, MaxBody: MaxPushBody,
			Summary: "Push a commit: a full snapshot of at most 500 files, 10 MB each, 25 MB in all. " +
				"Body: JSON {message, files: [{path, content, base64?}]}; or Content-Type application/gzip or application/x-tar: a tar(.gz) of the snapshot, " +
				"message in ?message= or the X-Commit-Message header (percent-encoded); or multipart/form-data: part manifest " +
				"(JSON {message, files: [{path, sha256, size}]}, every file) then part archive (tar(.gz) of the files the workspace does not hold; " +
				"409 missing_files lists any still missing)",
			Request: PushRequest{}, Response: CommitAnswer{},
			Query:   []api.Param{{Name: "message", Description: "tar(.gz) bodies: the commit message (or the X-Commit-Message header)"}},
			Headers: []api.Param{{Name: "X-Commit-Message", Description: "tar(.gz) bodies: the commit message, percent-encoded"}},
			RequestBodies: map[string]string{
				"application/gzip":    "a tar.gz of the snapshot (regular files and directories only)",
				"application/x-tar":   "a tar of the snapshot",
				"multipart/form-data": "part manifest (JSON {message, files: [{path, sha256, size}]}, every file) then part archive (a tar(.gz) of the files the workspace does not hold)"}},
		{Method: P, Path: "/api/repos/{id}/blobs/missing", Op: auth.OpRepoWrite, Handler: h.Missing,
			Summary: "Which of these file sums (at most 500) the workspace's repos do not hold: send only those in a manifest push", Request: MissingRequest{}, Response: MissingAnswer{}},
		{Method: G, Path: "/api/repos/{id}/files", Op: auth.OpRepoRead, Handler: h.Files,
			Summary: "File tree at ?commit= (default latest), or one text file with &path=", Response: Tree{}},
	}
}
