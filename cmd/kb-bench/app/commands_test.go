package app

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/spec"
)

// commandTree returns every command of kb-bench's tree, root first, as
// NewRootCommand builds it: a new command is in it without being listed.
func commandTree(t *testing.T) []*cobra.Command {
	t.Helper()
	var all []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		all = append(all, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(Streams{}, "test", func(string) string { return "" }))
	if len(all) < 20 {
		t.Fatalf("the tree has %d commands: not kb-bench's", len(all))
	}
	return all
}

// words is the command line that reaches c: its path without the root.
func words(c *cobra.Command) []string {
	return strings.Fields(c.CommandPath())[1:]
}

// Every command of the tree refuses what it does not take with exit status
// 2, naming itself: a word after a command with subcommands is an unknown
// command (with a suggestion for a near miss), one after a command without
// is a stray argument. Neither runs anything.
func TestEveryCommandRefusesWhatItDoesNotTake(t *testing.T) {
	// The commands that take arguments: what is too many for them. nil:
	// any number of arguments is valid (above a minimum), none is stray.
	// Every other command without subcommands takes none.
	tooMany := map[string][]string{
		"kb-bench gate":          {"a/", "b/"},
		"kb-bench profiles show": {"counter", "hot-key"},
		"kb-bench show":          {"a/", "b/"},
		"kb-bench compare":       nil, // A B [C ...]
		"kb-bench report":        nil, // RESULT|SET|SWEEP ...
	}
	env := map[string]string{"HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir()}
	for _, c := range commandTree(t) {
		path := c.CommandPath()
		t.Run(path, func(t *testing.T) {
			if c.HasSubCommands() {
				args := append(words(c), "nosuch")
				code, out, stderr := run(t, env, args...)
				want := `unknown command "nosuch" for "` + path + `" (see '` + path + ` --help')`
				if code != spec.ExitInput || !strings.Contains(stderr, want) || out != "" {
					t.Errorf("%q: exit %d, want %d and %q; stdout %q, stderr:\n%s", args, code, spec.ExitInput, want, out, stderr)
				}
				// A near miss of a subcommand's name is suggested.
				var sub *cobra.Command
				for _, s := range c.Commands() {
					if s.IsAvailableCommand() {
						sub = s
						break
					}
				}
				args = append(words(c), sub.Name()+"x")
				code, _, stderr = run(t, env, args...)
				want = `unknown command "` + sub.Name() + `x" for "` + path + `"; did you mean "` + sub.Name() + `"`
				if code != spec.ExitInput || !strings.Contains(stderr, want) {
					t.Errorf("%q: exit %d, want %d and %q:\n%s", args, code, spec.ExitInput, want, stderr)
				}
				// The command alone shows its help.
				code, out, stderr = run(t, env, words(c)...)
				if code != spec.ExitOK || !strings.Contains(out, "Available Commands:") {
					t.Errorf("%q alone: exit %d, want its help:\n%s%s", words(c), code, out, stderr)
				}
				return
			}
			stray, takesArgs := tooMany[path]
			if !takesArgs {
				stray = []string{"extra"}
			}
			if stray == nil {
				t.Skipf("%s takes any number of arguments: none is stray", path)
			}
			args := append(words(c), stray...)
			code, out, stderr := run(t, env, args...)
			if code != spec.ExitInput || !strings.Contains(stderr, path) || out != "" {
				t.Errorf("%q: exit %d, want %d and an error naming %q; stdout %q, stderr:\n%s", args, code, spec.ExitInput, path, out, stderr)
			}
		})
	}
}

// The verbs users bring from kind's CLI and from service managers reach
// the command that does the same, and so does every alias of the tree
// (its help is that command's own).
func TestAliasesReachTheirCommand(t *testing.T) {
	all := commandTree(t)
	root := all[0]
	for _, c := range []struct{ alias, command string }{
		{"local start", "kb-bench local up"},
		{"local stop", "kb-bench local down"},
		{"kind create", "kb-bench kind up"},
		{"kind delete", "kb-bench kind down"},
		{"kind get", "kb-bench kind status"},
	} {
		found, rest, err := root.Find(strings.Fields(c.alias))
		if err != nil || len(rest) > 0 || found.CommandPath() != c.command {
			t.Errorf("%s reaches %q (rest %q, error %v), want %s", c.alias, found.CommandPath(), rest, err, c.command)
		}
	}
	aliases := 0
	for _, c := range all {
		for _, alias := range c.Aliases {
			aliases++
			args := append(words(c.Parent()), alias, "--help")
			code, out, stderr := run(t, nil, args...)
			if code != spec.ExitOK || !strings.Contains(out, "Usage:\n  "+c.UseLine()) || !strings.Contains(out, "Aliases:\n  "+c.NameAndAliases()) {
				t.Errorf("%q: exit %d, want the help of %s:\n%s%s", args, code, c.CommandPath(), out, stderr)
			}
		}
	}
	if aliases < 5 {
		t.Errorf("the tree has %d aliases, want 5 at least", aliases)
	}
}

// A command's aliases are listed in its parent's help and offered by
// shell completion, beside its name.
func TestHelpAndCompletionListAliases(t *testing.T) {
	code, out, _ := run(t, nil, "local", "--help")
	for _, want := range []string{"(also: stop)", "(also: start)"} {
		if code != spec.ExitOK || !strings.Contains(out, want) {
			t.Errorf("local --help: exit %d, does not show %q:\n%s", code, want, out)
		}
	}
	for _, c := range []struct {
		args []string
		want []string // completions, one per line
	}{
		{[]string{"local", ""}, []string{"up\t", "down\t", "status\t", "start\tsame as up", "stop\tsame as down"}},
		{[]string{"kind", "d"}, []string{"down\t", "delete\tsame as down"}},
		{[]string{"kind", "g"}, []string{"get\tsame as status"}},
		{[]string{"kind", "c"}, []string{"create\tsame as up"}},
	} {
		code, out, stderr := run(t, nil, append([]string{cobra.ShellCompRequestCmd}, c.args...)...)
		if code != spec.ExitOK {
			t.Fatalf("completing %q: exit %d: %s", c.args, code, stderr)
		}
		for _, want := range c.want {
			if !strings.Contains("\n"+out, "\n"+want) {
				t.Errorf("completing %q does not offer %q:\n%s", c.args, want, out)
			}
		}
	}
}
