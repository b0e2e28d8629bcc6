package app

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/bench"
)

// newScenariosCommand lists the registered scenarios with their own flags.
func newScenariosCommand(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios",
		Short: "List the scenarios 'run --scenario' takes, with their own flags",
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(s.Out, 0, 0, 2, ' ', 0)
			for _, sc := range bench.Scenarios() {
				fmt.Fprintf(tw, "%s\t%s\n", sc.Name, sc.Description)
				if len(sc.Flags) > 0 {
					fmt.Fprintf(tw, "\tflags: %s\n", strings.Join(sc.Flags, " "))
				}
			}
			return tw.Flush()
		},
	}
}
