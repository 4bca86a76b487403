package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// Sizes of the two static files every server serves.
const (
	pageBytes = 4096
	fileBytes = 1 << 20
)

// commitFile is one file of a push (controlplane/repos: POST /api/repos/{id}/commits).
type commitFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Base64  bool   `json:"base64,omitempty"`
}

// commit is the body of a push.
type commit struct {
	Message string       `json:"message"`
	Files   []commitFile `json:"files"`
}

// runContent writes DIR/site/index.html (4 KB), DIR/site/big.bin (1 MiB,
// the same bytes on every run), and the push bodies DIR/commit-site.json
// (both files) and DIR/commit-app.json (a platform.json forwarding to
// -origin).
func runContent(args []string) error {
	fs := flag.NewFlagSet("content", flag.ContinueOnError)
	out := fs.String("out", "", "output directory")
	origin := fs.String("origin", "", "origin of the server app, http://host:port")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *origin == "" {
		return fmt.Errorf("content: -out and -origin are required")
	}
	site := filepath.Join(*out, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		return err
	}
	page := makePage()
	file := make([]byte, fileBytes)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(file); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			file[i+j] = byte(v >> (8 * j))
		}
	}
	if err := os.WriteFile(filepath.Join(site, "index.html"), page, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(site, "big.bin"), file, 0o644); err != nil {
		return err
	}
	siteCommit := commit{Message: "bench content", Files: []commitFile{
		{Path: "index.html", Content: string(page)},
		{Path: "big.bin", Content: base64.StdEncoding.EncodeToString(file), Base64: true},
	}}
	manifest, err := json.Marshal(map[string]string{"kind": "app", "origin": *origin})
	if err != nil {
		return err
	}
	appCommit := commit{Message: "bench app", Files: []commitFile{{Path: "platform.json", Content: string(manifest)}}}
	if err := writeJSON(filepath.Join(*out, "commit-site.json"), siteCommit); err != nil {
		return err
	}
	return writeJSON(filepath.Join(*out, "commit-app.json"), appCommit)
}

// makePage returns an HTML page of exactly pageBytes bytes.
func makePage() []byte {
	const head = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>bench</title></head><body>\n"
	const tail = "</body></html>\n"
	const para = "<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>\n"
	var b strings.Builder
	b.WriteString(head)
	for b.Len()+len(para)+len(tail)+len("<!---->\n") <= pageBytes {
		b.WriteString(para)
	}
	b.WriteString("<!--")
	for b.Len()+len("-->\n")+len(tail) < pageBytes {
		b.WriteByte('x')
	}
	b.WriteString("-->\n")
	b.WriteString(tail)
	if b.Len() != pageBytes {
		panic(fmt.Sprintf("benchkit: page is %d bytes, want %d", b.Len(), pageBytes))
	}
	return []byte(b.String())
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
