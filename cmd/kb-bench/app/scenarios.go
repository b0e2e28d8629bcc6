package app

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/workload"
)

// newScenariosCommand lists the registered scenarios with their own flags.
func newScenariosCommand(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios",
		Short: "List the scenarios 'run --scenario' takes, with their own flags",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(s.Out, 0, 0, 2, ' ', 0)
			for _, def := range workload.Scenarios() {
				var flags []string
				for _, f := range slices.Collect(reflect.TypeOf(def.NewSettings()).Elem().Fields()) {
					if name := f.Tag.Get("flag"); name != "" {
						flags = append(flags, "--"+name)
					}
				}
				fmt.Fprintf(tw, "%s\t%s\n", def.Name, def.Description)
				if len(flags) > 0 {
					fmt.Fprintf(tw, "\tflags: %s\n", strings.Join(flags, " "))
				}
			}
			return tw.Flush()
		},
	}
}
