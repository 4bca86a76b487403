// Package cli is the user commands of the platform binary, the ones
// people deploy with: login, link, deploy, rollback, env, logs, db, open,
// logout and completion. They drive the REST API through package client
// with the key stored by login (or PLATFORM_API_URL and
// PLATFORM_API_KEY), and every refusal says what to do next.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/svcplatform/platform/client"
)

// Env is what the commands read and write: the process's streams,
// environment and directories in Main, a test's own in Run.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads an environment variable.
	Getenv func(string) string
	// ConfigDir holds credentials.json ("" when the system names none).
	ConfigDir string
	// Dir is the working directory.
	Dir string
	// StdinTTY, StdoutTTY and StderrTTY tell which streams are terminals:
	// prompts, the progress bar and opening a browser need one.
	StdinTTY, StdoutTTY, StderrTTY bool
	// ReadSecret reads a line from the terminal without echoing it (nil:
	// read a plain line from Stdin).
	ReadSecret func() (string, error)
	// OpenURL opens an address in the browser (nil: only print it).
	OpenURL func(string) error
	// HTTP sends the API calls (nil: a client with DefaultTimeout).
	HTTP *http.Client
	// FollowEvery is how often a deploy is asked after (0: the client's
	// default).
	FollowEvery time.Duration

	stdin *lineReader
}

// command is one user command.
type command struct {
	name    string
	args    string // the positional arguments, for the usage line
	summary string
	example string
	run     func(ctx context.Context, e *Env, args []string) error
}

// commands are the user commands, in the order help lists them.
var commands []command

func init() {
	commands = []command{
		{"login", "[--api URL] [--key KEY | --device | --approve CODE]", "store the API address and key the other commands use (--device: approve a code instead of typing a key)",
			"platform login --api https://api.example.com\n  PLATFORM_API_KEY=... platform login --api http://127.0.0.1:7070\n  platform login --device --api https://api.example.com\n  platform login --approve BCDF-GHJK   # on a machine already logged in", runLogin},
		{"link", "[--project NAME_OR_ID] [--create] [DIR]", "tie a folder to a project (.platform/project.json)",
			"platform link --create            # a project and repo named after the folder\n  platform link --project blog", runLink},
		{"deploy", "[DIR] [--project NAME_OR_ID] [--message TEXT] [--preview] [--json]", "push a folder as a commit, deploy it, follow the log and print the address",
			"platform deploy\n  platform deploy --preview          # its own address; production keeps serving\n  platform deploy ./dist --json | jq -r .url", runDeploy},
		{"promote", "[DEPLOYMENT] [--project NAME_OR_ID] [--json]", "make a preview (default: the newest) or an earlier static deployment live, without building again",
			"platform promote\n  platform promote dpl_123", runPromote},
		{"rollback", "[COMMIT] [--project NAME_OR_ID] [--json]", "deploy an older commit again (default: what served before)",
			"platform rollback\n  platform rollback 3", runRollback},
		{"env", "ls|set|rm|pull [...] [--project NAME_OR_ID]", "list, set, remove or download (.env) the project's variables",
			"platform env set DATABASE_URL postgres://...\n  platform env ls\n  platform env rm DATABASE_URL\n  platform env pull       # writes .env", runEnv},
		{"logs", "[--follow] [--deployment ID] [--source LIST] [--since WHEN] [--project NAME_OR_ID] [--json]", "print the project's build, deploy, app and function log; --follow streams new lines",
			"platform logs --follow\n  platform logs --source app --since 1h\n  platform logs --deployment dpl_123 --json | jq -r .line", runLogs},
		{"db", "query SQL [PARAM...]|shell|export [--db NAME_OR_ID] [--project NAME_OR_ID] [--json] [-o FILE]", "query a project database, open a SQL shell on it, or export it as a .sql file",
			"platform db query \"SELECT * FROM users WHERE id = ?\" 42\n  platform db shell --db main\n  platform db export -o backup.sql", runDB},
		{"open", "[--print] [--project NAME_OR_ID]", "print the live address and open it in the browser",
			"platform open --print", runOpen},
		{"logout", "", "forget the stored key",
			"platform logout", runLogout},
		{"completion", "bash|zsh|fish", "print the shell completion script of the user commands",
			"platform completion bash > ~/.local/share/bash-completion/completions/platform\n  source <(platform completion zsh)\n  platform completion fish | source", runCompletion},
	}
}

// Has reports whether name is a user command.
func Has(name string) bool {
	return slices.ContainsFunc(commands, func(c command) bool { return c.name == name })
}

// Usage is the user commands' part of `platform help`.
func Usage() string {
	var b strings.Builder
	b.WriteString("user commands (deploy with these; \"platform COMMAND --help\" for an example):\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-13s  %s\n", c.name, c.summary)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Main runs a user command for the process and returns its exit status.
func Main(name string, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		StdinTTY: isTerminal(os.Stdin), StdoutTTY: isTerminal(os.Stdout), StderrTTY: isTerminal(os.Stderr), OpenURL: openBrowser}
	if dir, err := os.UserConfigDir(); err == nil {
		e.ConfigDir = filepath.Join(dir, "platform")
	}
	e.Dir, _ = os.Getwd()
	if e.StdinTTY {
		e.ReadSecret = func() (string, error) { return readSecret(os.Stdin) }
	}
	return Run(ctx, e, append([]string{name}, args...))
}

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// Run runs args[0] with the rest of args and returns the exit status:
// 0 done, 1 failed (the reason on Stderr), 2 a wrong command line.
func Run(ctx context.Context, e *Env, args []string) int {
	if len(args) == 0 || !Has(args[0]) {
		fmt.Fprintf(e.Stderr, "platform: not a user command: %q\n%s\n", strings.Join(args, " "), Usage())
		return exitUsage
	}
	if e.Getenv == nil {
		e.Getenv = func(string) string { return "" }
	}
	if e.Stdin == nil {
		e.Stdin = strings.NewReader("")
	}
	e.stdin = &lineReader{r: e.Stdin}
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == args[0] })
	err := commands[i].run(ctx, e, args[1:])
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(e.Stderr, "platform %s: %v\n  usage: platform %s %s\n", args[0], err, args[0], commands[i].args)
		return exitUsage
	}
	fmt.Fprintf(e.Stderr, "platform %s: %v\n", args[0], explain(err))
	return exitError
}

// flags returns the flag set of a command; --help prints the command's
// usage with its example.
func (e *Env) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {
		c := commands[slices.IndexFunc(commands, func(c command) bool { return c.name == name })]
		fmt.Fprintf(e.Stderr, "usage: platform %s %s\n\n%s.\n\nexample:\n  %s\n", c.name, c.args, c.summary, c.example)
		if hasFlags(fs) {
			fmt.Fprintln(e.Stderr, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parse reads flags wherever they stand among the positional arguments
// ("deploy ./site --json" as well as "deploy --json ./site") and returns
// the positional ones; after "--" everything is positional.
func parse(fs *flag.FlagSet, args []string, maxPositional int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) > maxPositional {
		return nil, usagef("too many arguments: %s", strings.Join(pos[maxPositional:], " "))
	}
	return pos, nil
}

// explain turns an API or transport failure into a sentence that says
// what to do.
func explain(err error) string {
	var te *client.TransportError
	if errors.As(err, &te) {
		return fmt.Sprintf("cannot reach the API at %s (%v): is the control plane running at that address? check it with platform login", te.URL, te.Err)
	}
	var ae *client.Error
	if !errors.As(err, &ae) {
		return err.Error()
	}
	switch {
	case ae.Status == http.StatusUnauthorized:
		return fmt.Sprintf("the API refused the key (%s): run platform login with a valid key", ae.Message)
	case ae.Code == "workspace_key_required":
		return fmt.Sprintf("%s: this key is limited to one project, and repos and deploys need a workspace key: run platform login with one", ae.Message)
	case ae.Status == http.StatusForbidden:
		return fmt.Sprintf("%s (%s): your role or key may not do this; ask a workspace admin", ae.Message, ae.Code)
	}
	return fmt.Sprintf("%s (%d %s)", ae.Message, ae.Status, ae.Code)
}
