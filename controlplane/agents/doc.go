// Package agents is the agents area: tool-calling loops that act on one
// project's own resources through the API itself, started on demand, in the
// background, on a schedule, by a signed app event or by a visitor chat
// message.
//
// A run calls a model through the AI gateway (billed to the workspace), runs
// the tool calls the model asks for by serving in-process REST requests
// through the API's own handler with a key made for the run (limited to the
// agent's project, never more than the starter's access, read-only unless
// the agent allows writes), feeds the results back and stops at a text
// answer or a stop reason. See README.md for the tools, their schemas, the
// start modes and the limits.
package agents
