// Command benchkit prepares and summarises the end-to-end load comparison of
// bench/run.sh: the content every server serves, the Shield settings of
// workload 1 with the matching nginx and Caddy rules, the result line of an
// h2load run, and the table of results; and it starts each run just after
// the kernel's DAMON burst (damon-wait). It starts no server and sends no
// request.
//
//	benchkit content -out DIR -origin URL
//	benchkit shield -geoip FILE -out DIR [-ranges 10000]
//	h2load ... --log-file LOG URL | benchkit h2load -log LOG [-proto h2|http/1.1] [-check]
//	benchkit table -in results.jsonl
//	benchkit damon-wait [-max 12s]
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "content":
		err = runContent(os.Args[2:])
	case "shield":
		err = runShield(os.Args[2:])
	case "h2load":
		err = runH2load(os.Args[2:], os.Stdin, os.Stdout)
	case "table":
		err = runTable(os.Args[2:], os.Stdout)
	case "damon-wait":
		err = runDAMONWait(os.Args[2:], os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchkit:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchkit content|shield|h2load|table|damon-wait [flags]")
	os.Exit(2)
}
