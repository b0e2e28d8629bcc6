package leaderelection

import (
	"os"
	"testing"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
)

// local is the real kube-apiserver and etcd the package's integration tests
// share.
var local clustertest.Shared

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }
