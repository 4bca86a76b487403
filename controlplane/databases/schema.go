package databases

// The query route's bodies hold JSON values of any type (params, result
// rows), which its Go types carry as raw JSON; these types describe them to
// the OpenAPI document.

// QuerySchema describes the body of POST /api/databases/{id}.
type QuerySchema struct {
	// SQL is one or more statements.
	SQL string `json:"sql,omitempty"`
	// Params bind SQL's placeholders in order: numbers, strings, null,
	// booleans, or {"$blob": "<base64>"}.
	Params []any `json:"params,omitempty"`
	// Batch is the alternative to sql: one statement per item.
	Batch []BatchItemSchema `json:"batch,omitempty"`
}

// BatchItemSchema describes one item of a batch.
type BatchItemSchema struct {
	// SQL is one statement.
	SQL string `json:"sql"`
	// Params bind its placeholders.
	Params []any `json:"params,omitempty"`
}

// QueryAnswerSchema describes both answers of POST /api/databases/{id}:
// {results, statements, meta} for sql, {batch} for a batch.
type QueryAnswerSchema struct {
	// Results are the last statement's rows, one object per row.
	Results []map[string]any `json:"results,omitempty"`
	// Statements is how many statements ran.
	Statements int `json:"statements,omitempty"`
	// Meta is what they did.
	Meta *Meta `json:"meta,omitempty"`
	// Batch has one entry per statement of a batch.
	Batch []BatchResultSchema `json:"batch,omitempty"`
}

// BatchResultSchema describes one entry of a batch answer.
type BatchResultSchema struct {
	// Results are the statement's rows.
	Results []map[string]any `json:"results"`
	// Meta is what it did.
	Meta Meta `json:"meta"`
}
