// Command fn is the example function: a WASI program (GOOS=wasip1
// GOARCH=wasm) that speaks the platform's function contract, CGI over WASI
// (runtime/README.md): the request in environment variables and stdin, the
// response (CGI headers, a blank line, the body) on stdout.
//
// A Go function can equally use the standard library's net/http/cgi.Serve
// with an ordinary http.Handler; this example uses only os and fmt so that
// its module stays small and the test suite fast.
package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"
)

func main() {
	path := os.Getenv("PATH_INFO")
	query, _ := url.ParseQuery(os.Getenv("QUERY_STRING"))
	switch path {
	case "/hello":
		reply(200, "text/plain", "hello from "+os.Getenv("SERVICE_PROJECT_ID")+"\n")
	case "/env":
		v, ok := os.LookupEnv(query.Get("k"))
		if !ok {
			reply(404, "text/plain", "unset\n")
			return
		}
		reply(200, "text/plain", v)
	case "/echo":
		body, err := io.ReadAll(os.Stdin)
		if err != nil {
			reply(500, "text/plain", err.Error())
			return
		}
		fmt.Printf("Status: 201 Created\r\nContent-Type: text/plain\r\nX-Method: %s\r\nX-Test: %s\r\n\r\n%s", os.Getenv("REQUEST_METHOD"), os.Getenv("HTTP_X_TEST"), body)
	case "/log":
		fmt.Fprintln(os.Stderr, "a line for the deployment log")
		reply(200, "text/plain", "logged\n")
	case "/loop":
		n := 0
		for {
			n++
		}
	case "/sleep":
		// Blocks in the host's poll_oneoff (the Go runtime's idle wait).
		d, err := time.ParseDuration(query.Get("d"))
		if err != nil {
			reply(400, "text/plain", err.Error())
			return
		}
		time.Sleep(d)
		reply(200, "text/plain", "slept "+d.String()+"\n")
	case "/alloc":
		var keep [][]byte
		for {
			keep = append(keep, make([]byte, 16<<20))
			keep[len(keep)-1][0] = 1
		}
	case "/exit":
		os.Exit(7)
	case "/garbage":
		fmt.Print("this is not a header block")
	default:
		reply(404, "text/plain", "no route "+strings.TrimPrefix(path, "/")+"\n")
	}
}

func reply(status int, contentType, body string) {
	fmt.Printf("Status: %d\r\nContent-Type: %s\r\n\r\n%s", status, contentType, body)
}
