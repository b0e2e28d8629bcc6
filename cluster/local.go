package cluster

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kb-bench/kb-bench/internal/proc"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/internal/atomicfile"
	"github.com/kb-bench/kb-bench/internal/netdelay"
	"github.com/kb-bench/kb-bench/spec"
)

// DefaultStartTimeout bounds how long StartLocal waits for /readyz.
const DefaultStartTimeout = 60 * time.Second

// memoryDir is the tmpfs that holds etcd's data with spec.StorageMemory.
const memoryDir = "/dev/shm"

// logTailLines is how much of each log a start failure quotes.
const logTailLines = 20

// Grace periods between SIGTERM and SIGKILL.
const (
	apiserverGrace = 10 * time.Second
	etcdGrace      = 5 * time.Second
)

// LocalOptions configures StartLocal.
type LocalOptions struct {
	// Binaries are the kube-apiserver and etcd to run (see FindBinaries).
	Binaries Binaries
	// Storage is spec.StorageDisk (the default: etcd data in the temp dir,
	// or under the user's cache dir when the temp dir is a tmpfs; fsync as
	// usual) or spec.StorageMemory (etcd data under /dev/shm).
	Storage spec.Storage
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// StartTimeout bounds the wait for /readyz (DefaultStartTimeout when 0).
	StartTimeout time.Duration
	// Detached starts the processes in their own session, without the
	// parent-death signal, so they can outlive kb-bench (`kb-bench local
	// up`). The janitor still guards them until the caller releases it:
	// a kb-bench killed before it recorded them leaves nothing behind.
	Detached bool
	// Dir is where the kb-bench-* temp dir is made (os.TempDir() when empty).
	Dir string
	// ControllerManager also starts kube-controller-manager (from
	// Binaries.ControllerManager) once the apiserver is ready, with the
	// default controllers, and waits until they work.
	ControllerManager bool
	// APIServers is how many kube-apiservers run on the one etcd (0 means
	// 1). Several share the serving certificate, the service-account keys
	// and the admin token, listen on ports of their own, and keep the
	// kubernetes Service's endpoints with the lease reconciler, as an HA
	// control plane does.
	APIServers int
	// EtcdDelay, when not zero, puts a delaying TCP proxy (package
	// netdelay), run by this process, between the apiservers and etcd.
	// A Detached control plane cannot have one: it would die with the
	// process that started it.
	EtcdDelay netdelay.Delay
}

// ControlPlane is a running local etcd and one or more kube-apiservers on
// 127.0.0.1. Stop it with Stop.
type ControlPlane struct {
	// st is what `local up` records of it (but Kubeconfig).
	st         LocalState
	creds      *credentials
	etcd       *proc.Process
	apiservers []*proc.Process
	kcm        *proc.Process   // nil without LocalOptions.ControllerManager
	proxy      *netdelay.Proxy // nil without LocalOptions.EtcdDelay
	binaries   Binaries
	janitor    *proc.Janitor

	stopOnce sync.Once
	stopErr  error
}

// errPortTaken marks a start that lost a race for a free port.
var errPortTaken = errors.New("a port was taken by another process")

// StartLocal starts etcd and kube-apiserver on free loopback ports and waits
// until the apiserver's /readyz answers ok. The apiserver serves TLS with a
// CA of its own, authenticates an admin by a static token (group
// system:masters), authorizes with RBAC and keeps the default admission
// plugins (ResourceQuota among them), like a real cluster. The processes
// die with kb-bench, even on kill -9, and their temp dir goes with them;
// only a Detached control plane that `kb-bench local up` recorded outlives it.
func StartLocal(ctx context.Context, o LocalOptions) (*ControlPlane, error) {
	if o.Binaries.APIServer == "" || o.Binaries.Etcd == "" {
		return nil, errors.New("LocalOptions.Binaries is empty: find them with cluster.FindBinaries")
	}
	if o.ControllerManager && o.Binaries.ControllerManager == "" {
		return nil, spec.Input(fmt.Errorf("--controller-manager needs kube-controller-manager next to kube-apiserver in %s, and it is not there: run `kb-bench local install --controller-manager` (builds it from the pinned source), or drop --controller-manager", o.Binaries.Dir))
	}
	o.Storage = cmp.Or(o.Storage, spec.StorageDisk)
	if o.Storage != spec.StorageDisk && o.Storage != spec.StorageMemory {
		return nil, spec.Input(fmt.Errorf("storage %q is not known (--storage): use %s or %s", o.Storage, spec.StorageDisk, spec.StorageMemory))
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	o.Log = cmp.Or(o.Log, io.Discard)
	o.APIServers = max(o.APIServers, 1)
	if o.Detached && !o.EtcdDelay.Zero() {
		return nil, spec.Input(errors.New("a kept control plane (`kb-bench local up`) cannot have etcd latency: the delaying proxy runs inside kb-bench. Pass --etcd-latency to `kb-bench run`, which starts a control plane of its own"))
	}
	for attempt := 1; ; attempt++ {
		cp, err := startOnce(ctx, o)
		if errors.Is(err, errPortTaken) && attempt < 3 && ctx.Err() == nil {
			fmt.Fprintf(o.Log, "local control plane: %v, retrying on other ports\n", errPortTaken)
			continue
		}
		return cp, err
	}
}

func startOnce(ctx context.Context, o LocalOptions) (cp *ControlPlane, err error) {
	begin := time.Now()
	elapsed := func() time.Duration { return time.Since(begin).Round(10 * time.Millisecond) }
	cp = &ControlPlane{st: LocalState{Storage: o.Storage, Binaries: o.Binaries.Dir, Started: begin}, binaries: o.Binaries}
	defer func() {
		if err != nil {
			// Quiet and quick: nothing useful ran yet.
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = cp.Stop(stopCtx)
			cp = nil
		}
	}()
	if cp.janitor, err = proc.StartJanitor(); err != nil {
		return cp, err
	}
	if cp.st.Dir, err = os.MkdirTemp(o.Dir, "kb-bench-*"); err != nil {
		return cp, fmt.Errorf("creating the control plane's temp dir: %w", err)
	}
	if strings.ContainsRune(cp.st.Dir, '\n') {
		return cp, spec.Input(fmt.Errorf("the temp dir %q has a newline in its name: set TMPDIR to a plain path", cp.st.Dir))
	}
	cp.janitor.WatchDir(cp.st.Dir)
	switch {
	case o.Storage == spec.StorageMemory:
		if cp.st.EtcdDataDir, err = os.MkdirTemp(memoryDir, "kb-bench-etcd-*"); err != nil {
			return cp, spec.Input(fmt.Errorf("storage memory puts etcd's data on the tmpfs %s, which is not usable here (%w): use --storage disk", memoryDir, err))
		}
	case onMemoryFS(cp.st.Dir):
		// /tmp is a tmpfs on many systems: disk storage must mean a disk,
		// or disk and memory results would be the same thing. The user's
		// cache dir is on disk.
		cache, cacheErr := os.UserCacheDir()
		if cacheErr != nil {
			return cp, fmt.Errorf("the temp dir is in memory and there is no cache dir for etcd's disk storage (%w): set TMPDIR to a directory on disk", cacheErr)
		}
		base := filepath.Join(cache, "kb-bench")
		if err = os.MkdirAll(base, 0o700); err != nil {
			return cp, err
		}
		if cp.st.EtcdDataDir, err = os.MkdirTemp(base, "kb-bench-etcd-*"); err != nil {
			return cp, fmt.Errorf("creating etcd's data dir on disk (the temp dir %s is in memory): %w", cp.st.Dir, err)
		}
		fmt.Fprintf(o.Log, "local control plane: %s is in memory, so etcd's disk storage goes to %s\n", filepath.Dir(cp.st.Dir), base)
	default:
		cp.st.EtcdDataDir = filepath.Join(cp.st.Dir, "etcd")
		if err = os.Mkdir(cp.st.EtcdDataDir, 0o700); err != nil {
			return cp, err
		}
	}
	cp.janitor.WatchDir(cp.st.EtcdDataDir)
	if cp.creds, err = writeCredentials(cp.st.Dir); err != nil {
		return cp, fmt.Errorf("writing the control plane's certificates: %w", err)
	}
	ports, err := freePorts(2 + o.APIServers)
	if err != nil {
		return cp, fmt.Errorf("finding free loopback ports: %w", err)
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	for _, port := range ports[2:] {
		cp.st.Servers = append(cp.st.Servers, "https://127.0.0.1:"+strconv.Itoa(port))
	}
	cp.st.Server = cp.st.Servers[0]

	waitCtx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()

	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	cp.etcd, err = cp.start("etcd", o.Binaries.Etcd, []string{
		"--name=kb-bench",
		"--data-dir=" + cp.st.EtcdDataDir,
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=kb-bench=" + peerURL,
	}, o.Detached)
	if err != nil {
		return cp, err
	}
	cp.st.Etcd = stateOf(cp.etcd, ports[0])
	if cp.st.EtcdVersion, err = cp.waitEtcd(waitCtx, etcdURL); err != nil {
		return cp, cp.startError(ctx, waitCtx, o.StartTimeout, "etcd", err)
	}
	fmt.Fprintf(o.Log, "local control plane: etcd %s ready on %s after %s (storage %s, data in %s)\n",
		cp.st.EtcdVersion, etcdURL, elapsed(), cp.st.Storage, cp.st.EtcdDataDir)

	// The apiservers reach etcd through the delaying proxy, when asked.
	etcdServers := etcdURL
	if !o.EtcdDelay.Zero() {
		if cp.proxy, err = netdelay.Listen(strings.TrimPrefix(etcdURL, "http://"), o.EtcdDelay); err != nil {
			return cp, fmt.Errorf("starting the delaying proxy in front of etcd: %w", err)
		}
		etcdServers = "http://" + cp.proxy.Addr()
		fmt.Fprintf(o.Log, "local control plane: the apiservers reach etcd through a proxy at %s that adds a %s round trip (jitter %s)\n", etcdServers, o.EtcdDelay.RTT, o.EtcdDelay.Jitter)
	}
	// The first apiserver alone bootstraps the empty etcd (RBAC roles,
	// priority levels, the kubernetes Service); the others start once it
	// is ready, together.
	if err := cp.startAPIServer(0, ports[2], etcdServers, o); err != nil {
		return cp, err
	}
	if cp.st.KubeVersion, err = cp.waitReady(waitCtx, 0); err != nil {
		return cp, cp.startError(ctx, waitCtx, o.StartTimeout, "kube-apiserver", err)
	}
	for i := 1; i < o.APIServers; i++ {
		if err := cp.startAPIServer(i, ports[2+i], etcdServers, o); err != nil {
			return cp, err
		}
	}
	for i := 1; i < o.APIServers; i++ {
		if _, err = cp.waitReady(waitCtx, i); err != nil {
			return cp, cp.startError(ctx, waitCtx, o.StartTimeout, fmt.Sprintf("kube-apiserver %d of %d", i+1, o.APIServers), err)
		}
	}
	apiservers := "kube-apiserver"
	if o.APIServers > 1 {
		apiservers = fmt.Sprintf("%d kube-apiservers", o.APIServers)
	}
	fmt.Fprintf(o.Log, "local control plane: %s %s ready at %s after %s\n", apiservers, cp.st.KubeVersion, strings.Join(cp.st.Servers, ", "), elapsed())
	if o.ControllerManager {
		if err := cp.startControllerManager(waitCtx, o.Detached); err != nil {
			return cp, cp.startError(ctx, waitCtx, o.StartTimeout, "kube-controller-manager", err)
		}
		fmt.Fprintf(o.Log, "local control plane: kube-controller-manager working after %s\n", elapsed())
	}
	cp.st.StartupTime = time.Since(begin)
	return cp, nil
}

// advertiseBase is where the apiservers of a control plane with several
// find the addresses they advertise: 192.0.2.0/24 (TEST-NET-1, RFC 5737),
// never routed. The lease endpoint reconciler puts each apiserver's
// advertised address into the kubernetes Service's endpoints, which
// refuse loopback addresses; nothing here dials them (the apiservers'
// peer proxy is off).
var advertiseBase = net.IPv4(192, 0, 2, 0)

// startAPIServer starts apiserver i of o.APIServers on port.
func (cp *ControlPlane) startAPIServer(i, port int, etcdServers string, o LocalOptions) error {
	name := "kube-apiserver"
	reconciler := []string{
		"--advertise-address=127.0.0.1",
		// A loopback address cannot go into the kubernetes Service's
		// endpoints, and nothing here needs them.
		"--endpoint-reconciler-type=none",
	}
	if o.APIServers > 1 {
		name = fmt.Sprintf("kube-apiserver-%d", i+1)
		ip := slices.Clone(advertiseBase.To4())
		ip[3] = byte(i + 1)
		reconciler = []string{"--advertise-address=" + ip.String(), "--endpoint-reconciler-type=lease"}
	}
	args := append([]string{"--bind-address=127.0.0.1"}, reconciler...)
	args = append(args,
		"--secure-port="+strconv.Itoa(port),
		"--etcd-servers="+etcdServers,
		"--cert-dir="+cp.st.Dir,
		"--tls-cert-file="+cp.creds.certFile,
		"--tls-private-key-file="+cp.creds.keyFile,
		"--token-auth-file="+cp.creds.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+cp.creds.saPubFile,
		"--service-account-signing-key-file="+cp.creds.saKeyFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		// The apiserver renews a Lease of its own every 10s (its identity):
		// noise, here, in the server cross-check of scenarios that write
		// Leases, and nothing on this control plane uses it.
		"--feature-gates=APIServerIdentity=false,UnknownVersionInteroperabilityProxy=false",
	)
	p, err := cp.start(name, o.Binaries.APIServer, args, o.Detached)
	if err != nil {
		return err
	}
	cp.apiservers = append(cp.apiservers, p)
	cp.st.APIServers = append(cp.st.APIServers, stateOf(p, port))
	cp.st.APIServer = cp.st.APIServers[0]
	return nil
}

// startControllerManager starts kube-controller-manager against the
// apiserver with the default controllers and no leader election, and
// waits until its controllers work: its /healthz answers and the service
// account controller has made the default namespace's ServiceAccount.
func (cp *ControlPlane) startControllerManager(ctx context.Context, detached bool) error {
	kubeconfig := filepath.Join(cp.st.Dir, "kube-controller-manager.kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return fmt.Errorf("finding a free loopback port: %w", err)
	}
	url := "https://127.0.0.1:" + strconv.Itoa(ports[0])
	cp.kcm, err = cp.start("kube-controller-manager", cp.binaries.ControllerManager, []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--cert-dir=" + filepath.Join(cp.st.Dir, "kube-controller-manager"),
		"--leader-elect=false",
		"--service-account-private-key-file=" + cp.creds.saKeyFile,
		"--root-ca-file=" + cp.creds.caFile,
		"--use-service-account-credentials=false",
	}, detached)
	if err != nil {
		return err
	}
	// Its serving certificate is self-signed: /healthz is all we read.
	health := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	admin, err := cp.adminClient()
	if err != nil {
		return err
	}
	return poll(ctx, cp.kcm, "last check: ", func() error {
		if err := get(ctx, health, url+"/healthz", nil); err != nil {
			return err
		}
		if err := get(ctx, admin, cp.st.Server+"/api/v1/namespaces/default/serviceaccounts/default", nil); err != nil {
			return fmt.Errorf("healthy, but its service account controller has not made the default ServiceAccount yet: %w", err)
		}
		return nil
	})
}

// startError explains a failed start with the end of both logs.
func (cp *ControlPlane) startError(ctx, waitCtx context.Context, timeout time.Duration, what string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("starting the local control plane: %w", ctx.Err())
	case waitCtx.Err() != nil:
		err = fmt.Errorf("%s was not ready within %s (%v)", what, timeout, err)
	}
	var tails string
	addTail := func(name string, p *proc.Process) {
		tail := "(not started)"
		if p != nil {
			tail = p.LogTail(logTailLines)
		}
		tails += fmt.Sprintf("\n--- %s log (last %d lines) ---\n%s", name, logTailLines, tail)
	}
	if len(cp.apiservers) == 0 {
		addTail("kube-apiserver", nil)
	}
	for _, p := range cp.apiservers {
		addTail(p.Name, p)
	}
	addTail("etcd", cp.etcd)
	if cp.kcm != nil {
		addTail(cp.kcm.Name, cp.kcm)
	}
	if strings.Contains(tails, "address already in use") {
		err = fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return fmt.Errorf("the local control plane did not start: %w (binaries from %s, %s); the logs end with:%s",
		err, cp.binaries.Source, cp.binaries.Dir, tails)
}

// start runs path with args, stdout and stderr appended to name.log in
// the control plane's dir, attached to kb-bench or detached from it (see
// proc.Start), and has the janitor watch it.
func (cp *ControlPlane) start(name, path string, args []string, detached bool) (*proc.Process, error) {
	p, err := proc.Start(exec.Command(path, args...), name, filepath.Join(cp.st.Dir, name+".log"), detached)
	if err == nil {
		cp.janitor.WatchGroup(p.Pid)
	}
	return p, err
}

// poll runs check every 50ms until it succeeds or p stops running, or
// until ctx ends: then it returns check's last error after prefix.
func poll(ctx context.Context, p *proc.Process, prefix string, check func() error) error {
	for {
		if !p.Running() {
			return fmt.Errorf("%s %s", p.Name, p.ExitStatus())
		}
		last := check()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s%w", prefix, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// adminClient is an HTTP client of the admin's with a 2s timeout.
func (cp *ControlPlane) adminClient() (*http.Client, error) {
	client, err := rest.HTTPClientFor(cp.RESTConfig())
	if err == nil {
		client.Timeout = 2 * time.Second
	}
	return client, err
}

// waitEtcd polls etcd's /health until it is healthy and returns its version.
func (cp *ControlPlane) waitEtcd(ctx context.Context, etcdURL string) (string, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	err := poll(ctx, cp.etcd, "", func() error {
		var health struct {
			Health string `json:"health"`
		}
		if err := get(ctx, client, etcdURL+"/health", &health); err != nil || health.Health == "true" {
			return err
		}
		return fmt.Errorf("etcd health is %q", health.Health)
	})
	if err != nil {
		return "", err
	}
	var v struct {
		Server string `json:"etcdserver"`
	}
	if err := get(ctx, client, etcdURL+"/version", &v); err != nil {
		return "", fmt.Errorf("reading etcd's version: %w", err)
	}
	return "v" + v.Server, nil
}

// settledConfigMap is the ConfigMap the apiserver writes once after start.
const settledConfigMap = "/api/v1/namespaces/kube-system/configmaps/kube-apiserver-legacy-service-account-token-tracking"

// waitReady polls the apiserver's /readyz with the admin token until it
// answers ok and it has written its own ConfigMap, and returns the version
// /version reports.
func (cp *ControlPlane) waitReady(ctx context.Context, i int) (string, error) {
	client, err := cp.adminClient()
	if err != nil {
		return "", err
	}
	server := cp.st.Servers[i]
	err = poll(ctx, cp.apiservers[i], "last /readyz: ", func() error {
		// Ready, and settled: right after start the apiserver creates a
		// ConfigMap of its own (legacy token tracking). Waiting for it
		// keeps that write out of a first run's server cross-check.
		if err := get(ctx, client, server+"/readyz", nil); err != nil {
			return err
		}
		if err := get(ctx, client, server+settledConfigMap, nil); err != nil {
			return fmt.Errorf("ready, but the apiserver has not yet written its own ConfigMap: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := get(ctx, client, server+"/version", &v); err != nil {
		return "", fmt.Errorf("reading the apiserver's version: %w", err)
	}
	return v.GitVersion, nil
}

// get GETs url, wants 200 (the error quotes the start of the body) and,
// unless v is nil, decodes the JSON body into v.
func get(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, msg)
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(body, v)
}

// freePorts returns n distinct free loopback ports. They are free when
// returned; another process may still take one before we bind it, which
// StartLocal handles by retrying.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close() // held until all are chosen, so that they differ
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// RESTConfig returns a new config for the admin: host, CA and bearer
// token. QPS, Burst and user agent are left to the caller.
func (cp *ControlPlane) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            cp.st.Server,
		BearerToken:     cp.creds.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), cp.creds.caPEM...)},
	}
}

// kubeconfigName names the cluster, user and context in written kubeconfigs.
const kubeconfigName = "kb-bench-local"

// WriteKubeconfig writes a kubeconfig for the admin (context
// kb-bench-local) to path, readable only by the owner, for kubectl or any
// client-go tool.
func (cp *ControlPlane) WriteKubeconfig(path string) error {
	b, err := kubeconfigNamed(cp.RESTConfig(), kubeconfigName)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o600)
}

// State is what `kb-bench local up` records of a control plane (but the
// kubeconfig): its URLs, storage, versions, processes and dirs.
func (cp *ControlPlane) State() LocalState { return cp.st }

// Lost returns a channel closed when etcd or kube-controller-manager
// exit by themselves (killed, crashed), or every kube-apiserver has: of
// several, the others go on serving (as behind a load balancer), and the
// run with them. why says how. Stop also ends them: stop watching before
// calling it.
func (cp *ControlPlane) Lost() (lost <-chan struct{}, why func() string) {
	procs := append([]*proc.Process{cp.etcd}, cp.apiservers...)
	if cp.kcm != nil {
		procs = append(procs, cp.kcm)
	}
	ch := make(chan struct{})
	var (
		once   sync.Once
		reason string
		dead   atomic.Int32 // apiservers exited
	)
	for _, p := range procs {
		go func() {
			select {
			case <-p.Exited():
				if slices.Contains(cp.apiservers, p) && int(dead.Add(1)) < len(cp.apiservers) {
					return
				}
				once.Do(func() {
					reason = p.Name + " " + p.ExitStatus()
					if len(cp.apiservers) > 1 && slices.Contains(cp.apiservers, p) {
						reason = "the last of its kube-apiservers, " + reason
					}
					close(ch)
				})
			case <-ch:
			}
		}()
	}
	return ch, func() string {
		<-ch
		return reason
	}
}

// KillAPIServer kills (SIGKILL) apiserver i (from 0), as a fault
// injected into a run (spec.Target.KillAPIServer).
func (cp *ControlPlane) KillAPIServer(i int) error {
	if i < 0 || i >= len(cp.apiservers) {
		return fmt.Errorf("there is no apiserver %d of %d to kill", i+1, len(cp.apiservers))
	}
	p := cp.apiservers[i]
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing %s (pid %d): %w", p.Name, p.Pid, err)
	}
	return nil
}

// EtcdMetrics is the URL of etcd's /metrics (its client URL, plain HTTP
// on loopback).
func (cp *ControlPlane) EtcdMetrics() string { return etcdMetricsURL(cp.st.Etcd.Port) }

// etcdMetricsURL is the /metrics URL of the local etcd on port.
func etcdMetricsURL(port int) string {
	if port == 0 {
		return ""
	}
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics"
}

// Stop sends SIGTERM to the controller manager, the apiserver, then etcd, SIGKILLs a process group
// that has not exited after a grace period (at once when ctx ends), and
// removes the temp dir. Calling it again returns the first call's result.
func (cp *ControlPlane) Stop(ctx context.Context) error {
	cp.stopOnce.Do(func() {
		cp.stopErr = stopAndClean(ctx, [][]*proc.Process{{cp.kcm}, cp.apiservers, {cp.etcd}}, []string{cp.st.Dir, cp.st.EtcdDataDir})
		if cp.proxy != nil {
			// After the apiservers: they reach etcd through it until they stop.
			cp.proxy.Close()
		}
		if cp.stopErr == nil {
			cp.janitor.Release()
		}
		// On an error the janitor stays: when kb-bench exits it kills what
		// is left and removes the directories.
	})
	return cp.stopErr
}

// stopAndClean terminates the stages of processes in order, the
// processes of one stage together (nil ones are skipped), then removes
// the dirs (os.RemoveAll skips empty names), unless a process would not die.
func stopAndClean(ctx context.Context, stages [][]*proc.Process, dirs []string) error {
	var errs []error
	for _, stage := range stages {
		stageErrs := make([]error, len(stage))
		var wg sync.WaitGroup
		for i, p := range stage {
			if p == nil {
				continue
			}
			grace := etcdGrace
			if strings.HasPrefix(p.Name, "kube-apiserver") {
				grace = apiserverGrace
			}
			wg.Go(func() { _, stageErrs[i] = p.Stop(ctx, grace, nil) })
		}
		wg.Wait()
		errs = append(errs, stageErrs...)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
