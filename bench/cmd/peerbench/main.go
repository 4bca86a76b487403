// Command peerbench measures control-plane areas beside the peer a user
// would pick instead, on the same data in the same run, and prints a table
// of medians of per-round ratios (bench/peers.sh, bench/README.md "Areas
// against their peers").
//
//	peerbench vectors  -cache DIR -out DIR [-n 100000] [-rounds 3] ...
//	peerbench upstream -addr 127.0.0.1:PORT [-chunks 16] [-chunk-delay 0]
//	peerbench ai       -out DIR -direct URL -platform URL -portkey URL ...
//	peerbench databases -out DIR -platform URL -platform-key KEY -d1 URL ...
//	peerbench functions -out DIR -platform URL -host NAME -workerd URL ...
//
// vectors runs the platform's index in this process and hnswlib and FAISS
// in a Python process (bench/peers/vectors.py) it drives over a pipe;
// upstream is the fake OpenAI-compatible server both AI gateways relay to;
// ai loads the gateways; databases loads the platform's database API and a
// miniflare Worker on D1 (bench/peers/d1.mjs); functions calls a
// hello-world function through the edge and the same handler in workerd
// (bench/peers/fn.mjs). Nothing here reaches beyond loopback.
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
	case "vectors":
		err = runVectors(os.Args[2:])
	case "upstream":
		err = runUpstream(os.Args[2:])
	case "ai":
		err = runAI(os.Args[2:])
	case "databases":
		err = runDB(os.Args[2:])
	case "functions":
		err = runFunctions(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: peerbench vectors|upstream|ai|databases|functions [flags] (bench/README.md)")
	os.Exit(2)
}
