package app

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/spec"
)

// checkCommandLine makes every command of the tree, cobra's help and
// completion commands included, refuse what it does not take as bad input
// (exit status 2), so a mistyped command never succeeds silently:
//   - a command with subcommands takes none of its own arguments: a word
//     that names no subcommand is an unknown command, with suggestions, and
//     the command alone shows its help;
//   - a command without subcommands takes no arguments unless it says
//     otherwise (its own Args), and whatever its Args refuses is bad input.
//
// It also lists each command's aliases next to it in its parent's help and
// offers them in shell completion, which cobra leaves to the name alone.
// It is done once here for the whole tree, so a new command is covered.
func checkCommandLine(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			c.Args = helpTopic
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case c.HasSubCommands():
			c.Args = unknownCommand
			c.ValidArgsFunction = completeAliases
			if c.SuggestionsMinimumDistance <= 0 {
				c.SuggestionsMinimumDistance = 2 // cobra's own default
			}
			if !c.Runnable() {
				// Without a run function cobra would show the help for
				// any argument, never checking it.
				c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
			}
		case c.Args == nil:
			c.Args = noArgs
		default:
			c.Args = asInput(c.Args)
		}
		if len(c.Aliases) > 0 {
			c.Short += " (also: " + strings.Join(c.Aliases, ", ") + ")"
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// noArgs is the arguments check of a command that takes none.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return spec.Input(fmt.Errorf("%s takes no arguments, got %q (see '%s --help')", calledPath(c), args, calledPath(c)))
	}
	return nil
}

// nArgs is the arguments check of a command that takes as many arguments
// as ok accepts; otherwise it says so by says, a format of the command's
// path.
func nArgs(ok func(n int) bool, says string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if !ok(len(args)) {
			return spec.Input(fmt.Errorf(says, c.CommandPath()))
		}
		return nil
	}
}

// one accepts one argument.
func one(n int) bool { return n == 1 }

// unknownCommand is the arguments check of a command with subcommands:
// any argument is a subcommand that does not exist. It suggests the
// subcommands whose name or alias is close to it.
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], calledPath(c))
	if s := suggestions(c, args[0]); len(s) > 0 {
		for i := range s {
			s[i] = strconv.Quote(s[i])
		}
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return spec.Input(fmt.Errorf("%s (see '%s --help')", msg, calledPath(c)))
}

// suggestions are the subcommands of c that a mistyped name was likely
// meant to be, by cobra's rule: within SuggestionsMinimumDistance edits, or
// a prefix, or listed in the subcommand's SuggestFor. cobra looks at names
// only; the aliases are the verbs users bring from other tools, so a near
// miss of one is offered too, by the same rule applied to stand-in commands
// named after them.
func suggestions(c *cobra.Command, typed string) []string {
	if c.DisableSuggestions {
		return nil
	}
	aliases := &cobra.Command{SuggestionsMinimumDistance: c.SuggestionsMinimumDistance}
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		for _, a := range sub.Aliases {
			aliases.AddCommand(&cobra.Command{Use: a, Run: func(*cobra.Command, []string) {}})
		}
	}
	return append(c.SuggestionsFor(typed), aliases.SuggestionsFor(typed)...)
}

// helpTopic is the arguments check of `help COMMAND...`: the words must
// name a command, else cobra would print the root's help and succeed.
func helpTopic(c *cobra.Command, args []string) error {
	found, rest, err := c.Root().Find(args)
	if err == nil && len(rest) > 0 {
		err = unknownCommand(found, rest)
		if !found.HasSubCommands() {
			err = spec.Input(fmt.Errorf("%s has no subcommands, got %q (see '%s --help')", found.CommandPath(), rest, found.CommandPath()))
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", c.CommandPath(), err)
	}
	return nil
}

// completeAliases completes the aliases of c's subcommands, which cobra's
// completion leaves out (it completes their names).
func completeAliases(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var comps []cobra.Completion
	if len(args) > 0 {
		return comps, cobra.ShellCompDirectiveNoFileComp
	}
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		for _, a := range sub.Aliases {
			if strings.HasPrefix(a, toComplete) {
				comps = append(comps, cobra.CompletionWithDesc(a, "same as "+sub.Name()))
			}
		}
	}
	return comps, cobra.ShellCompDirectiveNoFileComp
}

// asInput makes whatever the arguments check args refuses bad input (exit
// status 2): cobra's own checks return plain errors.
func asInput(args cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if err := args(c, a); err != nil {
			return spec.Input(err)
		}
		return nil
	}
}

// calledPath is c's command path as the user typed it: with the alias
// they used for c.
func calledPath(c *cobra.Command) string {
	if !c.HasParent() {
		return c.Name()
	}
	return calledPath(c.Parent()) + " " + cmp.Or(c.CalledAs(), c.Name())
}
