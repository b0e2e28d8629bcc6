package bench_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/kb-bench/kb-bench/bench"
	"github.com/kb-bench/kb-bench/results/render/text"
)

// Gate a saved run in CI: read it, judge it against a file of thresholds,
// print the verdicts, and fail when one does not hold.
func ExampleGate() {
	verdicts, err := bench.Gate(context.Background(), bench.GateRequest{Candidate: "testdata/run", Thresholds: "testdata/gate.yaml"})
	if verdicts != nil {
		_ = text.WriteVerdicts(os.Stdout, verdicts, "text")
	}
	if errors.Is(err, bench.ErrGateFailed) {
		fmt.Println("the gate failed")
	}
	// Output:
	// threshold           baseline  candidate  verdict  why
	// p99 < 50ms          -         57.6ms     FAIL     absolute (the candidate's median decides): 57.6ms < 50.0ms does not hold
	// conflictRate < 50%  -         30.5%      pass     absolute (the candidate's median decides): 30.5% < 50.0% holds
	// lostUpdates == 0    -         0          pass     absolute (the candidate's median decides): 0 == 0 holds
	// the gate failed
}

// Run 8 and 32 writers doing read-modify-write on one ConfigMap, three
// samples each, on a local control plane of its own, then compare the two
// configurations. It needs the control plane's binaries (make
// control-plane), so it is not run as a test.
func ExampleRun() {
	plan, err := bench.Resolve(context.Background(), bench.Request{
		Overrides: []bench.Override{bench.Set("writers", 8, 32), bench.Set("strategy", "retry"), bench.Set("duration", "10s")},
		Count:     3,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := bench.Run(context.Background(), plan, bench.Options{Out: "kb-bench-results/example", Stdout: os.Stdout, Log: os.Stderr})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range out.Cells {
		fmt.Printf("%s: %d samples\n", c.Dir, len(c.Results))
	}
}
