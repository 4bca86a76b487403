// Command benchkit prepares and summarises the end-to-end load comparison of
// bench/run.sh: the content every server serves, the Shield settings of
// workload 1 with the matching nginx and Caddy rules, and the table of
// results; and it starts each run just after the kernel's DAMON burst
// (damon-wait). It starts no server and sends no request.
//
//	benchkit content -out DIR -origin URL
//	benchkit shield -geoip FILE -out DIR [-ranges 10000]
//	benchkit table -in results.jsonl [-settings settings.txt]
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
	fmt.Fprintln(os.Stderr, "usage: benchkit content|shield|table|damon-wait [flags]")
	os.Exit(2)
}
