// Command bareloop is the yardstick kb-bench's engine is measured against:
// one writer doing the read-modify-write a controller does, with client-go
// and nothing else (GET a ConfigMap, increment a counter in it, PUT it
// with its resourceVersion), in a process of its own, on the cluster of a
// kubeconfig. Like kb-bench's default it sets no client-side rate limit
// (client-go would otherwise hold it to 5 requests a second); everything
// else is client-go's default. It prints the operations per second of the
// measured window, after a warm-up. scripts/vs-bare.sh runs it in turn
// with 'kb-bench run --writers 1'.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster to write to (required)")
	namespace := flag.String("namespace", "default", "namespace of the ConfigMap it creates, writes and deletes")
	warmup := flag.Duration("warmup", time.Second, "run this long before the measured window")
	duration := flag.Duration("duration", 8*time.Second, "the measured window")
	labels := flag.String("labels", "", "labels of the ConfigMap, KEY=VALUE,... (kb-bench puts two on its objects)")
	opsLog := flag.String("ops-log", "", "also write when each operation ended (Unix nanoseconds, one a line) to this file, to count another program's window")
	flag.Parse()
	if *kubeconfig == "" || *duration <= 0 || *warmup < 0 {
		fmt.Fprintln(os.Stderr, "bareloop: give --kubeconfig, a --duration above 0 and a --warmup of 0 or more")
		os.Exit(2)
	}
	labelSet, err := parseLabels(*labels)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareloop: --labels:", err)
		os.Exit(2)
	}
	ops, ended, err := run(*kubeconfig, *namespace, labelSet, *warmup, *duration)
	if err == nil && *opsLog != "" {
		err = writeOpsLog(*opsLog, ended)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareloop:", err)
		os.Exit(1)
	}
	fmt.Printf("%.1f ops/s (%d operations in %s)\n", float64(ops)/duration.Seconds(), ops, *duration)
}

// run creates a ConfigMap of its own, increments it in a loop for warmup
// then duration, checks that every increment landed, deletes it, and
// returns the operations of the measured window and when each operation
// ended.
func run(kubeconfig, namespace string, labels map[string]string, warmup, duration time.Duration) (ops int64, ended []int64, err error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return 0, nil, err
	}
	cfg.QPS = -1
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, nil, err
	}
	ctx := context.Background()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	cms := c.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "bareloop-" + hex.EncodeToString(b), Labels: labels},
		Data:       map[string]string{"n": "0"},
	}, metav1.CreateOptions{})
	if err != nil {
		return 0, nil, err
	}
	defer func() {
		err = errors.Join(err, cms.Delete(context.WithoutCancel(ctx), cm.Name, metav1.DeleteOptions{}))
	}()
	var done int64
	start := time.Now()
	windowStart, end := start.Add(warmup), start.Add(warmup+duration)
	for now := start; now.Before(end); now = time.Now() {
		got, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			return 0, nil, err
		}
		n, _ := strconv.ParseInt(got.Data["n"], 10, 64)
		got.Data["n"] = strconv.FormatInt(n+1, 10)
		if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			return 0, nil, err
		}
		done++
		ended = append(ended, time.Now().UnixNano())
		if !now.Before(windowStart) {
			ops++
		}
	}
	got, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		return 0, nil, err
	}
	if got.Data["n"] != strconv.FormatInt(done, 10) {
		return 0, nil, fmt.Errorf("the counter reads %s after %d increments: an update was lost", got.Data["n"], done)
	}
	return ops, ended, nil
}

// writeOpsLog writes the operations' end times, one a line.
// parseLabels reads KEY=VALUE,KEY=VALUE; "" is no labels.
func parseLabels(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	labels := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not KEY=VALUE", kv)
		}
		labels[k] = v
	}
	return labels, nil
}

func writeOpsLog(path string, ended []int64) error {
	b := make([]byte, 0, 20*len(ended))
	for _, t := range ended {
		b = strconv.AppendInt(b, t, 10)
		b = append(b, '\n')
	}
	return os.WriteFile(path, b, 0o644)
}
