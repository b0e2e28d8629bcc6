// Command kb-bench benchmarks Kubernetes apiserver write contention.
package main

import (
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/spf13/cobra"
	_ "go.yaml.in/yaml/v3"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/leaderelection"
	_ "k8s.io/client-go/util/retry"
	_ "sigs.k8s.io/kind/pkg/cluster"
)

func main() {}
