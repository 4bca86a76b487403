package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// subcommands are the words that follow a command, for completion.
var subcommands = map[string][]string{
	"env":        {"ls", "set", "rm", "pull"},
	"db":         {"query", "shell", "export"},
	"completion": {"bash", "zsh", "fish"},
}

// commandFlags are each command's flags, for completion.
var commandFlags = map[string][]string{
	"login":      {"--api", "--key", "--device", "--approve", "--help"},
	"link":       {"--project", "--create", "--help"},
	"deploy":     {"--project", "--message", "--preview", "--json", "--help"},
	"promote":    {"--project", "--json", "--help"},
	"rollback":   {"--project", "--json", "--help"},
	"env":        {"--project", "--force", "--help"},
	"logs":       {"--follow", "--deployment", "--source", "--stream", "--since", "--limit", "--project", "--json", "--help"},
	"db":         {"--project", "--db", "--json", "-o", "--help"},
	"open":       {"--print", "--project", "--help"},
	"logout":     {"--help"},
	"completion": {"--help"},
}

func runCompletion(_ context.Context, e *Env, args []string) error {
	fs := e.flags("completion")
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("name the shell: bash, zsh or fish")
	}
	script, err := completionScript(pos[0])
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(e.Stdout, script)
	return err
}

// completionScript returns the completion of the user commands for shell.
func completionScript(shell string) (string, error) {
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, c.name)
	}
	var b strings.Builder
	switch shell {
	case "bash":
		b.WriteString("# platform completion for bash: source <(platform completion bash)\n")
		b.WriteString("_platform() {\n  local cur=\"${COMP_WORDS[COMP_CWORD]}\" cmd=\"${COMP_WORDS[1]}\"\n")
		fmt.Fprintf(&b, "  if [ \"$COMP_CWORD\" -eq 1 ]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(names, " "))
		b.WriteString("  case \"$cmd\" in\n")
		for _, n := range names {
			words := append(slices.Clone(subcommands[n]), commandFlags[n]...)
			fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", n, strings.Join(words, " "))
		}
		b.WriteString("  esac\n}\ncomplete -o default -F _platform platform\n")
	case "zsh":
		b.WriteString("#compdef platform\n# platform completion for zsh: source <(platform completion zsh)\n")
		b.WriteString("_platform() {\n  if (( CURRENT == 2 )); then\n")
		fmt.Fprintf(&b, "    compadd -- %s\n    return\n  fi\n  case \"${words[2]}\" in\n", strings.Join(names, " "))
		for _, n := range names {
			words := append(slices.Clone(subcommands[n]), commandFlags[n]...)
			fmt.Fprintf(&b, "    %s) compadd -- %s ;;\n", n, strings.Join(words, " "))
		}
		b.WriteString("  esac\n}\nif [ \"$funcstack[1]\" = \"_platform\" ]; then _platform \"$@\"; else compdef _platform platform; fi\n")
	case "fish":
		b.WriteString("# platform completion for fish: platform completion fish | source\n")
		for _, c := range commands {
			fmt.Fprintf(&b, "complete -c platform -f -n __fish_use_subcommand -a %s -d %q\n", c.name, c.summary)
		}
		for _, n := range names {
			for _, s := range subcommands[n] {
				fmt.Fprintf(&b, "complete -c platform -f -n '__fish_seen_subcommand_from %s' -a %s\n", n, s)
			}
			for _, f := range commandFlags[n] {
				if strings.HasPrefix(f, "--") {
					fmt.Fprintf(&b, "complete -c platform -n '__fish_seen_subcommand_from %s' -l %s\n", n, strings.TrimPrefix(f, "--"))
				} else {
					fmt.Fprintf(&b, "complete -c platform -n '__fish_seen_subcommand_from %s' -s %s\n", n, strings.TrimPrefix(f, "-"))
				}
			}
		}
	default:
		return "", usagef("%q is not a shell this completes: bash, zsh or fish", shell)
	}
	return b.String(), nil
}

// Names lists the user commands, in the order help lists them.
func Names() []string {
	out := make([]string, 0, len(commands))
	for _, c := range commands {
		out = append(out, c.name)
	}
	return out
}
