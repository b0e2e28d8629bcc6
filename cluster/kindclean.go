package cluster

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kb-bench/kb-bench/internal/proc"
)

// kindClusterLabel is the label kind puts on every container of a cluster
// (io.x-k8s.kind.cluster=NAME; sigs.k8s.io/kind's docker provider).
const kindClusterLabel = "io.x-k8s.kind.cluster"

// kindCleanup is the shell command line that removes what a create of the
// kind cluster name left behind when kb-bench died during it (kill -9):
// the containers kind labelled as the cluster's nodes, with their
// anonymous volumes, then kind's network ("kind") as removeKindNetwork
// does: when a create of kb-bench's made it, or, when madeNow, this
// create found none (it died before recording the one kind made; it is
// recorded now), and in either case only when no other cluster uses it
// (the runtime refuses).
// A `run` that kb-bench started may still be on its way when kb-bench
// dies, so the removal repeats until three passes a second apart find
// nothing (at most a minute). runtime is docker, podman or nerdctl (kind's
// runtimes) and name a checked cluster name: nothing needs quoting.
func kindCleanup(runtime, name string, madeNow bool) string {
	made := shellQuote(kindNetworksMade())
	recorded := fmt.Sprintf(`[ -e %s/"$id" ]`, made)
	if madeNow {
		// Recorded first, so that when another cluster uses it (the
		// removal is refused) the last one out removes it.
		recorded = fmt.Sprintf(`mkdir -p %[1]s && : > %[1]s/"$id"`, made)
	}
	network := strings.Join([]string{
		fmt.Sprintf(`id=$(%s network inspect kind --format '{{.Id}}' 2>/dev/null) || exit 0`, runtime),
		`case "$id" in ""|*[!0-9a-f]*) exit 0;; esac`,
		fmt.Sprintf(`if %s; then %s network rm "$id" >/dev/null 2>&1 && rm -f %s/"$id"; fi`, recorded, runtime, made),
	}, "; ")
	return strings.Join([]string{
		"n=0; i=0",
		fmt.Sprintf("while [ $n -lt 3 ] && [ $i -lt 60 ]; do ids=$(%s ps -aq --filter label=%s=%s 2>/dev/null)", runtime, kindClusterLabel, name),
		fmt.Sprintf("if [ -n \"$ids\" ]; then %s rm -f -v $ids >/dev/null 2>&1; n=0; else n=$((n+1)); fi", runtime),
		"i=$((i+1)); sleep 1; done",
		// Under kindNetworkLock, as removeKindNetwork, where flock(1) is.
		fmt.Sprintf("if command -v flock >/dev/null 2>&1; then flock -x %s sh -c %s; else sh -c %[2]s; fi", shellQuote(kindNetworkLock), shellQuote(network)),
	}, "; ")
}

// guardKind starts a janitor that deletes the cluster st describes, and
// kb-bench's records of it, should kb-bench die before Release; nil (no
// guard) when it cannot start.
func guardKind(getenv func(string) string, st *KindState) *proc.Janitor {
	rt, err := kindRuntime(getenv)
	if err != nil {
		return nil
	}
	j, err := proc.StartJanitor()
	if err != nil {
		return nil
	}
	j.RunOnDeath(kindCleanup(rt, st.Options.Name, false))
	state := filepath.Join(filepath.Dir(st.Kubeconfig), st.Options.Name+".json")
	j.RunOnDeath("rm -f " + shellQuote(st.Kubeconfig) + " " + shellQuote(state))
	return j
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
