// Package ai is the AI gateway: chat (plain and streamed as server-sent
// events), a chat-completions-compatible surface under /api/ai/v1,
// embeddings, request history and exact per-request billing.
//
// A request is validated against the specification's limits, checked
// against the workspace admins' switches and the per-minute rate limit,
// routed (service-1 by tier through an ordered fallback list; a pinned model
// first, then its tier), and an estimate is reserved on the billing ledger
// before the upstream call; afterwards the exact cost is charged and the rest
// released. Upstream protocols live in the provider subpackage; mock
// upstreams for tests in upstreamtest.
package ai
