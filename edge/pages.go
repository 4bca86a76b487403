package edge

import (
	"html"
	"strconv"
)

// errorPage returns the HTML page answered when an app's or function's
// origin fails: what happened, in words a visitor understands, and that it
// is not their fault.
func errorPage(status int, kind siteKind) string {
	what := "app"
	if kind == kindFunction {
		what = "function"
	}
	var title, text string
	switch status {
	case 504:
		title = "Gateway Timeout"
		text = "The " + what + " behind this address did not answer in time. Try again in a moment."
	case 503:
		title = "Service Unavailable"
		text = "The " + what + " behind this address is too busy right now. Try again in a moment."
	default:
		title = "Bad Gateway"
		text = "The " + what + " behind this address could not be reached or gave an invalid answer. Try again in a moment."
	}
	code := strconv.Itoa(status)
	return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>` + code + " " + title + `</title>
<style>body{font:16px/1.5 system-ui,sans-serif;display:grid;place-items:center;min-height:100vh;margin:0;background:#f6f7f9;color:#111}
main{max-width:32rem;padding:2rem}h1{font-size:1.5rem;margin:0 0 .5rem}p{color:#444}</style>
</head><body><main><h1>` + code + " " + html.EscapeString(title) + `</h1><p>` + html.EscapeString(text) + `</p>
<p>If you run this ` + what + `, check that it is running and answering on its origin address.</p></main></body></html>
`
}
