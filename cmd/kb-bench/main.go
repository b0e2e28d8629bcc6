// Command kb-bench benchmarks Kubernetes apiserver write contention: many
// clients writing the same objects under optimistic concurrency.
package main

import (
	"os"

	"github.com/kb-bench/kb-bench/cmd/kb-bench/app"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() {
	os.Exit(app.Main(version))
}
