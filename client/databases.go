package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Database is a project database.
type Database struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Engine    string `json:"engine"`
	ProjectID string `json:"projectId"`
	Status    string `json:"status"`
}

// Databases lists a project's databases.
func (c *Client) Databases(ctx context.Context, projectID string) ([]Database, error) {
	var out struct {
		Databases []Database `json:"databases"`
	}
	return out.Databases, c.get(ctx, "/api/projects/"+esc(projectID)+"/databases", &out)
}

// RawQueryResult is a query's answer with each row as it came (its
// columns in the database's order).
type RawQueryResult struct {
	Results    []json.RawMessage          `json:"results"`
	Statements int                        `json:"statements"`
	Meta       map[string]json.RawMessage `json:"meta"`
}

// QueryRaw is Query keeping each row's JSON, so its columns keep their
// order.
func (c *Client) QueryRaw(ctx context.Context, databaseID, sql string, params ...any) (RawQueryResult, error) {
	var out RawQueryResult
	body := map[string]any{"sql": sql}
	if len(params) > 0 {
		body["params"] = params
	}
	return out, c.post(ctx, "/api/databases/"+esc(databaseID), body, &out)
}

// Export is where a database export stands.
type Export struct {
	// Status is active while it runs, then complete or failed.
	Status   string `json:"status"`
	Bookmark string `json:"bookmark"`
	// Download is the address of the .sql file once complete.
	Download  string `json:"download,omitempty"`
	SizeBytes int64  `json:"sizeBytes,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Export starts an export of a database (bookmark "") or asks after one.
func (c *Client) Export(ctx context.Context, databaseID, bookmark string) (Export, error) {
	var out Export
	body := map[string]string{}
	if bookmark != "" {
		body["bookmark"] = bookmark
	}
	return out, c.post(ctx, "/api/databases/"+esc(databaseID)+"/export", body, &out)
}

// DownloadExport opens a complete export's .sql file (Export.Download, an
// address of this API); the caller closes it.
func (c *Client) DownloadExport(ctx context.Context, download string) (io.ReadCloser, error) {
	path := download
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		i := strings.Index(path, "/api/")
		if i < 0 {
			return nil, &Error{Status: 0, Code: "bad_download", Message: "the export's address is not one of this API: " + download}
		}
		path = path[i:]
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+path, nil)
	if err != nil {
		return nil, err
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, &TransportError{Method: http.MethodGet, URL: c.BaseURL + path, Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, decodeError(resp.StatusCode, data)
	}
	return resp.Body, nil
}
