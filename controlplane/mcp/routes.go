package mcp

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Routes are the connector's rows of the API's route table: the Streamable
// HTTP transport at Path. They are Public because the handler checks the
// bearer key itself (401 without one) and each tool call is authorized by
// its own REST route; GET and DELETE answer 405 (sessions are not kept).
func (s *Server) Routes() []api.Route {
	h := s.Handler()
	serve := func(w http.ResponseWriter, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	}
	return []api.Route{
		{Method: http.MethodPost, Path: Path, Public: true, MaxBody: MaxRequestBody, Handler: serve,
			Summary: "Assistant connector: MCP Streamable HTTP (JSON-RPC; Authorization: Bearer <API key>)"},
		{Method: http.MethodGet, Path: Path, Public: true, Handler: serve,
			Summary: "Assistant connector: no standalone event stream (405)"},
		{Method: http.MethodDelete, Path: Path, Public: true, Handler: serve,
			Summary: "Assistant connector: no sessions to end (405)"},
	}
}
