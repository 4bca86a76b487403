package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/svcplatform/platform/client"
)

// Environment variables that override the stored login (the first name of
// each pair is the documented one).
var (
	envAPI = []string{"PLATFORM_API_URL", "PLATFORM_API"}
	envKey = []string{"PLATFORM_API_KEY", "PLATFORM_KEY"}
)

// Credentials is what login stores in ConfigDir/credentials.json (mode
// 0600).
type Credentials struct {
	API string `json:"api"`
	Key string `json:"key"`
}

// CredentialsFile is the file login writes, under the config directory.
const CredentialsFile = "credentials.json"

func (e *Env) credentialsPath() (string, error) {
	if e.ConfigDir == "" {
		return "", errors.New("the system names no config directory (set XDG_CONFIG_HOME or HOME), or set PLATFORM_API_URL and PLATFORM_API_KEY")
	}
	return filepath.Join(e.ConfigDir, CredentialsFile), nil
}

func (e *Env) firstEnv(names []string) string {
	for _, n := range names {
		if v := strings.TrimSpace(e.Getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// loadCredentials reads the stored login; a missing file is no error.
func (e *Env) loadCredentials() (Credentials, error) {
	var c Credentials
	p, err := e.credentialsPath()
	if err != nil {
		return c, nil
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read %s: %w", p, err)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("%s is not valid JSON (%v): run platform login again", p, err)
	}
	return c, nil
}

// saveCredentials writes the login, readable by its owner only.
func (e *Env) saveCredentials(c Credentials) (string, error) {
	p, err := e.credentialsPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(p), err)
	}
	data, _ := json.MarshalIndent(c, "", "  ")
	tmp, err := os.CreateTemp(filepath.Dir(p), ".credentials-*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	return p, nil
}

// api returns a client from the environment's or the stored login.
func (e *Env) api() (*client.Client, error) {
	stored, err := e.loadCredentials()
	if err != nil {
		return nil, err
	}
	base, key := e.firstEnv(envAPI), e.firstEnv(envKey)
	if base == "" {
		base = stored.API
	}
	if key == "" {
		key = stored.Key
	}
	if base == "" || key == "" {
		return nil, errors.New("not logged in: run platform login (or set PLATFORM_API_URL and PLATFORM_API_KEY)")
	}
	return e.newClient(base, key)
}

func (e *Env) newClient(base, key string) (*client.Client, error) {
	c, err := client.New(base, key)
	if err != nil {
		return nil, err
	}
	if e.HTTP != nil {
		c.HTTP = e.HTTP
	}
	c.UserAgent = "platform-cli"
	return c, nil
}

// Link is .platform/project.json: the project and repo a folder deploys to.
type Link struct {
	ProjectID string `json:"projectId"`
	RepoID    string `json:"repoId"`
	// Project is the project's name when linked, for messages.
	Project string `json:"project,omitempty"`
}

// LinkDir and LinkFile name the link inside a folder.
const (
	LinkDir  = ".platform"
	LinkFile = "project.json"
)

// findLink looks for .platform/project.json in dir and its parents, as git
// finds its repository; it returns the link and the folder holding it.
func findLink(dir string) (Link, string, error) {
	var l Link
	for d := dir; ; {
		data, err := os.ReadFile(filepath.Join(d, LinkDir, LinkFile))
		if err == nil {
			if err := json.Unmarshal(data, &l); err != nil || l.ProjectID == "" {
				return l, d, fmt.Errorf("%s is damaged: run platform link again", filepath.Join(d, LinkDir, LinkFile))
			}
			return l, d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return l, "", errNotLinked
		}
		d = parent
	}
}

var errNotLinked = errors.New("this folder is not linked to a project: run platform link (--create makes the project), or pass --project NAME_OR_ID")

func writeLink(dir string, l Link) (string, error) {
	p := filepath.Join(dir, LinkDir, LinkFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	data, _ := json.MarshalIndent(l, "", "  ")
	return p, os.WriteFile(p, append(data, '\n'), 0o644)
}

// lineReader reads answers to prompts line by line.
type lineReader struct {
	r  io.Reader
	br *bufio.Reader
}

// reader returns what is left of the input.
func (l *lineReader) reader() io.Reader {
	if l.br == nil {
		return l.r
	}
	return l.br
}

func (l *lineReader) line() (string, error) {
	if l.br == nil {
		l.br = bufio.NewReader(l.r)
	}
	s, err := l.br.ReadString('\n')
	if err != nil && (!errors.Is(err, io.EOF) || s == "") {
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// prompt asks a question on Stderr (at a terminal) and reads the answer;
// secret answers are not echoed.
func (e *Env) prompt(question string, secret bool) (string, error) {
	if e.StdinTTY {
		fmt.Fprint(e.Stderr, question)
	}
	var s string
	var err error
	if secret && e.ReadSecret != nil {
		s, err = e.ReadSecret()
		fmt.Fprintln(e.Stderr)
	} else {
		s, err = e.stdin.line()
	}
	if errors.Is(err, io.EOF) {
		return "", errors.New("no answer on standard input: " + strings.TrimSpace(question))
	}
	return strings.TrimSpace(s), err
}
