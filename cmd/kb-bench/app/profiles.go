package app

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/profiles"
)

func newProfilesCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List and show the shipped workload profiles",
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the shipped profiles with a line each",
		RunE: func(*cobra.Command, []string) error {
			ps, err := profiles.List()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(s.Out, 0, 0, 2, ' ', 0)
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Description)
			}
			return tw.Flush()
		},
	}
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a shipped profile's YAML (a starting point for your own)",
		Args:  nArgs(one, "%[1]s takes one profile name (see 'kb-bench profiles list')"),
		RunE: func(_ *cobra.Command, args []string) error {
			b, err := profiles.ShippedYAML(args[0])
			if err != nil {
				return err
			}
			_, err = s.Out.Write(b)
			return err
		},
	}
	cmd.AddCommand(list, show)
	return cmd
}
