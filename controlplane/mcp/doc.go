// Package mcp is the assistant connector: the spec's connector tools
// (create_repo, push_files, get_repo_files, deploy_repo, list_repos,
// get_service_config, update_service_config, security_overview, and those
// of areas that join later) served over the Model Context Protocol on the
// official Go SDK.
//
// A tool has no rules of its own: each call becomes the REST request of the
// matching route (method, path, JSON body), carrying the caller's own API key
// and the header X-Service-Via: connector, and is served by the control
// plane's API handler (in process behind /api/mcp, or over the network in
// stdio mode). Permissions, limits, validation and audit are exactly the
// REST ones; the REST answer is the tool's structured result and a REST error
// is a tool error with its code and message. The connector adds only the
// spec's own connector limits (push_files: 300 files of about 600 KB each).
package mcp
