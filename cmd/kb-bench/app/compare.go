package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
)

// newCompareCommand compares saved results, side by side.
func newCompareCommand(s Streams) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "compare A B [C ...]",
		Short: "Compare saved results side by side, with the significance of each change",
		Long: `Compare the key figures of saved results, each side against the first:
throughput, conflicts, attempts, latency percentiles, lost updates and the
server cross-check.

Each argument is one side: a result (its directory or result.json), or a
directory of result directories, whose results are that side's samples.
With several samples a side shows the median and its range, and each change
is tested with the Mann-Whitney U test: "~" where it is not significant
(p > 0.05) or where too few samples could never show it.`,
		Example: `  kb-bench compare kb-bench-results/run-a kb-bench-results/run-b
  kb-bench compare before/ after/ --format markdown >> "$GITHUB_STEP_SUMMARY"`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 2 {
				return &flagError{fmt.Errorf("%s needs two results or more to compare (see '%s --help')", c.CommandPath(), c.CommandPath())}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if !slices.Contains(results.CompareFormats, format) {
				return spec.Input(fmt.Errorf("--format %q is not known: use %s", format, strings.Join(results.CompareFormats, ", ")))
			}
			sides := make([]results.Side, len(args))
			for i, a := range args {
				rs, err := readSide(a)
				if err != nil {
					return spec.Input(err)
				}
				sides[i] = results.Side{Label: filepath.Base(filepath.Clean(a)), Results: rs}
			}
			c, err := results.Compare(sides)
			if err != nil {
				return spec.Input(err)
			}
			return results.WriteComparison(s.Out, c, format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "text, markdown (for a CI job summary or a pull request), csv or json")
	return cmd
}

// readSide reads a result, or every result in the directories below a
// directory that holds no result.json itself.
func readSide(path string) ([]*results.Result, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w (pass a result directory, its result.json, or a directory of result directories)", err)
	}
	if !fi.IsDir() {
		r, err := results.Read(path)
		return []*results.Result{r}, err
	}
	if _, err := os.Stat(filepath.Join(path, results.ResultFile)); err == nil {
		r, err := results.Read(path)
		return []*results.Result{r}, err
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var rs []*results.Result
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(path, e.Name(), results.ResultFile)); err != nil {
			continue
		}
		r, err := results.Read(filepath.Join(path, e.Name()))
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil, errors.New(path + " holds no result: pass a result directory, its result.json, or a directory of result directories")
	}
	return rs, nil
}
