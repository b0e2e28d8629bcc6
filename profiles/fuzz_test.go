package profiles

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
)

// FuzzParse feeds the loader arbitrary bytes. No input may panic it; every
// rejection must be an input error (exit status 2); and whatever it accepts
// must resolve (defaults and validation of the shared spec and of the
// scenario's settings), since the loader promises it checked that.
//
// Run it for a while with:
//
//	go test -run='^$' -fuzz=FuzzParse -fuzztime=10s ./profiles
//
// A plain `go test` runs the seed corpus only: the shipped profiles and
// every file in testdata.
func FuzzParse(f *testing.F) {
	for _, name := range Names() {
		data, err := ShippedYAML(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data, resolve)
		if err != nil {
			if !spec.IsInput(err) {
				t.Fatalf("rejection is not an input error: %v", err)
			}
			return
		}
		s := p.Spec
		r, errs := workload.Resolve(s)
		if len(errs) > 0 {
			t.Fatalf("Parse accepted a profile whose spec does not resolve:\n%s", spec.Describe(errs))
		}
		s = r.Spec
	})
}
