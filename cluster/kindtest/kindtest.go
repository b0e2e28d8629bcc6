// Package kindtest is a test double of the docker CLI as kind's docker
// provider (and kb-bench's own image check and pull) drive it, so that
// kind's real create and delete flows run to their end on machines where
// no kind node can boot.
//
// Start builds a small `docker` program (./docker) into a temp dir to put
// first on PATH; each call it gets is answered by the engine running in
// the test process, which keeps the state a daemon would (images,
// networks, containers and the files written into them), records every
// call, and answers what kind asks: info, inspect, network, run, logs,
// exec, ps, rm, pull (and kb-bench's image labels and privileged-container
// check). A node "runs" the commands kind execs in it: cat, mkdir, cp
// /dev/stdin (the kubeadm and containerd configurations kind writes are
// kept), kubeadm init/join (which write /etc/kubernetes/admin.conf from
// Options.AdminKubeconfig), kubectl, true. A port a container publishes is
// listened on and forwarded to Options.Forward, as docker's proxy forwards
// to a container: with a real local apiserver there, the kubeconfig kind
// exports reaches it exactly as a kind user's reaches theirs.
package kindtest

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/template"
)

// SocketEnv names the variable that tells the docker program where the
// engine listens.
const SocketEnv = "KB_BENCH_DOCKER_DOUBLE"

// Labels kind puts on its containers.
const (
	ClusterLabel = "io.x-k8s.kind.cluster"
	RoleLabel    = "io.x-k8s.kind.role"
)

// RegistryError is what a pull of an image the registry does not hold
// prints, as Docker does when no registry answers.
const RegistryError = `Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host`

// Options configures the double.
type Options struct {
	// Images are in the runtime from the start.
	Images []string
	// Registry holds the images a pull (or a run of a missing image) can
	// fetch; any other pull fails with RegistryError.
	Registry []string
	// AdminKubeconfig is the /etc/kubernetes/admin.conf that kubeadm init
	// writes into a node (default: one for a server nobody serves).
	AdminKubeconfig []byte
	// Forward is the host:port that published ports forward to; empty,
	// nothing is listened on.
	Forward string
	// Fail makes a call fail: when it returns ok, the call prints stderr
	// and exits with code, and changes nothing.
	Fail func(args []string) (stderr string, code int, ok bool)
	// Info replaces fields of what `docker info` reports (default:
	// cgroup v2, overlay2), e.g. {"CgroupVersion": "1", "Driver":
	// "fuse-overlayfs"}.
	Info map[string]any
	// Labels are the labels of images, by image.
	Labels map[string]map[string]string
}

// Call is one invocation of the docker program.
type Call struct {
	Args []string
	Code int
}

// String is the call as a command line.
func (c Call) String() string { return "docker " + strings.Join(c.Args, " ") }

// Container is what `docker run` made, as the engine holds it.
type Container struct {
	Name, ID, Image string
	// RunArgs are the arguments of the `docker run` that made it.
	RunArgs []string
	Labels  map[string]string
	// Env is its environment as run set it (-e NAME=VALUE, or -e NAME
	// with the value in the docker program's environment).
	Env     map[string]string
	Network string
	// Publish are its --publish values (127.0.0.1:PORT:6443/tcp).
	Publish []string
	// Files are the files written into it (path -> content), including
	// the ones its image holds.
	Files map[string]string

	ip4, ip6  string
	listeners []net.Listener
}

// Runtime is a running double. Its methods are safe for concurrent use.
type Runtime struct {
	dir, sock string
	o         Options
	ln        net.Listener
	wg        sync.WaitGroup

	mu         sync.Mutex
	calls      []Call
	images     map[string]bool
	networks   map[string]*network
	containers map[string]*Container
	conns      map[net.Conn]bool
	nextIP     int
	closed     bool
}

type network struct {
	name, id, subnet string
	options          map[string]string
}

// Start builds the docker program, starts the engine and stops it when
// the test ends (closing every forwarded connection).
func Start(t testing.TB, o Options) *Runtime {
	t.Helper()
	// A short directory: a unix socket path has at most 107 bytes.
	dir, err := os.MkdirTemp("", "kbd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "docker"), "github.com/kb-bench/kb-bench/cluster/kindtest/docker")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the docker double: %v\n%s", err, out)
	}
	r := &Runtime{
		dir: dir, sock: filepath.Join(dir, "engine.sock"), o: o,
		images:     map[string]bool{},
		networks:   map[string]*network{"bridge": {name: "bridge", id: newID(), subnet: "172.17.0.0/16", options: map[string]string{"com.docker.network.driver.mtu": "1500"}}},
		containers: map[string]*Container{},
		conns:      map[net.Conn]bool{},
	}
	for _, i := range o.Images {
		r.images[i] = true
	}
	if r.ln, err = net.Listen("unix", r.sock); err != nil {
		t.Fatal(err)
	}
	r.wg.Go(r.serve)
	t.Cleanup(r.close)
	return r
}

// Env is what a process needs to use the double: PATH with the docker
// program first, and the engine's socket.
func (r *Runtime) Env() []string {
	return []string{"PATH=" + r.dir + string(os.PathListSeparator) + os.Getenv("PATH"), SocketEnv + "=" + r.sock}
}

// Setenv points this test process's docker at the double (for code that
// runs in the test process, as kind's library does).
func (r *Runtime) Setenv(t testing.TB) {
	for _, kv := range r.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Calls returns every call so far, in order.
func (r *Runtime) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Containers returns copies of the containers that exist, by name.
func (r *Runtime) Containers() []Container {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Container
	for _, name := range sortedKeys(r.containers) {
		c := *r.containers[name]
		c.Files = maps.Clone(c.Files)
		c.Labels = maps.Clone(c.Labels)
		c.Env = maps.Clone(c.Env)
		c.listeners = nil
		out = append(out, c)
	}
	return out
}

// Networks returns the networks that exist besides docker's bridge.
func (r *Runtime) Networks() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.DeleteFunc(sortedKeys(r.networks), func(n string) bool { return n == "bridge" })
}

func (r *Runtime) close() {
	r.mu.Lock()
	r.closed = true
	r.ln.Close()
	for _, c := range r.containers {
		for _, l := range c.listeners {
			l.Close()
		}
	}
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *Runtime) serve() {
	for {
		conn, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Go(func() {
			defer conn.Close()
			var req struct {
				Args  []string
				Stdin []byte
				Env   map[string]string
			}
			if err := json.NewDecoder(conn).Decode(&req); err != nil {
				return
			}
			stdout, stderr, code := r.do(req.Args, req.Stdin, req.Env)
			_ = json.NewEncoder(conn).Encode(struct {
				Stdout, Stderr []byte
				Code           int
			}{[]byte(stdout), []byte(stderr), code})
		})
	}
}

// do answers one call and records it.
func (r *Runtime) do(args []string, stdin []byte, env map[string]string) (stdout, stderr string, code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() { r.calls = append(r.calls, Call{Args: args, Code: code}) }()
	if r.o.Fail != nil {
		if msg, c, ok := r.o.Fail(args); ok {
			return "", msg, c
		}
	}
	if len(args) == 0 {
		return "", "Usage:  docker [OPTIONS] COMMAND\n", 0
	}
	switch args[0] {
	case "-v", "--version":
		return "Docker version 20.10.24, build kb-bench-test-double\n", "", 0
	case "info":
		return r.info(args[1:])
	case "context":
		return r.context(args[1:])
	case "image":
		if len(args) > 1 && args[1] == "inspect" {
			return r.imageInspect(args[2:])
		}
	case "inspect":
		return r.inspect(args[1:])
	case "pull":
		if len(args) == 2 {
			return r.pull(args[1])
		}
	case "network":
		return r.network(args[1:])
	case "run":
		return r.run(args[1:], env)
	case "logs":
		return r.logs(args[1:])
	case "exec":
		return r.exec(args[1:], stdin)
	case "ps":
		return r.ps(args[1:])
	case "rm":
		return r.rm(args[1:])
	}
	return "", fmt.Sprintf("docker: '%s' is not a docker command the kb-bench test double answers\n", strings.Join(args, " ")), 125
}

// flags splits args into flags and positional arguments; valued names
// the flags that take a value. With stop, everything from the first
// positional argument on is positional (docker run IMAGE CMD...).
func flags(args []string, valued map[string]bool, stop bool) (map[string][]string, []string) {
	f := map[string][]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			if stop {
				return f, append(rest, args[i:]...)
			}
			rest = append(rest, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		if k, v, ok := strings.Cut(name, "="); ok {
			f[k] = append(f[k], v)
			continue
		}
		if valued[name] && i+1 < len(args) {
			f[name] = append(f[name], args[i+1])
			i++
			continue
		}
		f[name] = append(f[name], "")
	}
	return f, rest
}

func last(f map[string][]string, names ...string) string {
	for _, n := range names {
		if v := f[n]; len(v) > 0 {
			return v[len(v)-1]
		}
	}
	return ""
}

var formatFlags = map[string]bool{"format": true, "f": true, "type": true, "filter": true}

// formatted prints data as docker does: each item by the --format
// template, a line each, or without one all of them as one JSON array.
func formatted(format string, data ...any) (string, string, int) {
	if format == "" && len(data) > 0 {
		b, _ := json.MarshalIndent(data, "", "    ")
		return string(b) + "\n", "", 0
	}
	t, err := template.New("format").Funcs(template.FuncMap{"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	}}).Parse(format)
	var out bytes.Buffer
	for _, d := range data {
		if err == nil {
			err = t.Execute(&out, d)
			out.WriteByte('\n')
		}
	}
	if err != nil {
		return "", fmt.Sprintf("template: %v\n", err), 1
	}
	return out.String(), "", 0
}

func (r *Runtime) info(args []string) (string, string, int) {
	f, _ := flags(args, formatFlags, false)
	info := map[string]any{
		"ServerVersion": "20.10.24", "Driver": "overlay2", "CgroupDriver": "systemd", "CgroupVersion": "2",
		"MemoryLimit": true, "PidsLimit": true, "CPUShares": true,
		"SecurityOptions": []string{"name=seccomp,profile=default", "name=cgroupns"},
		"DriverStatus":    [][]string{{"Backing Filesystem", "extfs"}, {"Supports d_type", "true"}},
	}
	maps.Copy(info, r.o.Info)
	if format := last(f, "format", "f"); format != "" {
		return formatted(format, info)
	}
	return "Server Version: 20.10.24\nStorage Driver: overlay2\nCgroup Version: 2\n", "", 0
}

func (r *Runtime) context(args []string) (string, string, int) {
	f, rest := flags(args, formatFlags, false)
	if len(rest) != 2 || rest[0] != "inspect" {
		return "", "docker context: the double answers `context inspect NAME` only\n", 1
	}
	return formatted(last(f, "format", "f"), map[string]any{"Name": rest[1], "Endpoints": map[string]any{"docker": map[string]any{"Host": "unix:///var/run/docker.sock"}}})
}

func (r *Runtime) imageInspect(names []string) (string, string, int) {
	f, names := flags(names, formatFlags, false)
	var out []any
	for _, n := range names {
		if !r.images[n] {
			return "[]\n", "Error: No such image: " + n + "\n", 1
		}
		var labels map[string]string // null when none, as docker prints it
		if l := r.o.Labels[n]; len(l) > 0 {
			labels = l
		}
		out = append(out, map[string]any{"RepoTags": []string{n}, "Config": map[string]any{"Labels": labels}})
	}
	return formatted(last(f, "format", "f"), out...)
}

func (r *Runtime) inspect(args []string) (string, string, int) {
	f, names := flags(args, formatFlags, false)
	if last(f, "type") == "image" {
		return r.imageInspect(names)
	}
	format := last(f, "format", "f")
	var data []any
	for _, n := range names {
		c, ok := r.containers[n]
		if !ok {
			found, _, _ := formatted(format, data...)
			return found, "Error: No such object: " + n + "\n", 1
		}
		data = append(data, c.inspectData())
	}
	return formatted(format, data...)
}

// inspectData is the part of `docker inspect`'s document kind reads.
func (c *Container) inspectData() map[string]any {
	ports := map[string][]map[string]string{}
	for _, p := range c.Publish {
		host, port, cport := splitPublish(p)
		ports[cport] = append(ports[cport], map[string]string{"HostIp": host, "HostPort": port})
	}
	return map[string]any{
		"Name": "/" + c.Name, "Id": c.ID,
		"Config": map[string]any{"Image": c.Image, "Labels": c.Labels, "Hostname": c.Name},
		"NetworkSettings": map[string]any{
			"Networks": map[string]any{c.Network: map[string]any{"IPAddress": c.ip4, "GlobalIPv6Address": c.ip6}},
			"Ports":    ports,
		},
	}
}

// splitPublish splits 127.0.0.1:PORT:6443/tcp into the host address, the
// host port and the container port with its protocol.
func splitPublish(p string) (host, port, containerPort string) {
	i := strings.LastIndex(p, ":")
	containerPort = strings.ToLower(p[i+1:]) // docker takes 6443/TCP as 6443/tcp
	if !strings.Contains(containerPort, "/") {
		containerPort += "/tcp"
	}
	host, port, _ = net.SplitHostPort(p[:i])
	return host, port, containerPort
}

func (r *Runtime) pull(image string) (string, string, int) {
	repo, tag := splitImage(image)
	if r.images[image] {
		return fmt.Sprintf("%s: Pulling from %s\nStatus: Image is up to date for %s\n", tag, repo, image), "", 0
	}
	if !slices.Contains(r.o.Registry, image) {
		return "", RegistryError + "\n", 1
	}
	r.images[image] = true
	return fmt.Sprintf("%s: Pulling from %s\n6c0a1e2f9b3d: Pulling fs layer\n6c0a1e2f9b3d: Download complete\n6c0a1e2f9b3d: Pull complete\nStatus: Downloaded newer image for %s\n%s\n", tag, repo, image, image), "", 0
}

// splitImage splits an image reference into its repository and tag
// (latest when it names none), leaving out any digest.
func splitImage(image string) (repo, tag string) {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i], image[i+1:]
	}
	return image, "latest"
}

func (r *Runtime) network(args []string) (string, string, int) {
	if len(args) == 0 {
		return "", "Usage:  docker network COMMAND\n", 1
	}
	f, rest := flags(args[1:], map[string]bool{"format": true, "f": true, "filter": true, "d": true, "driver": true, "o": true, "opt": true, "subnet": true}, false)
	switch args[0] {
	case "ls":
		var match *regexp.Regexp
		for _, flt := range f["filter"] {
			if v, ok := strings.CutPrefix(flt, "name="); ok {
				match = regexp.MustCompile(v)
			}
		}
		var rows []any
		for _, n := range sortedKeys(r.networks) {
			if match == nil || match.MatchString(n) {
				rows = append(rows, map[string]any{"ID": r.networks[n].id[:12], "Name": n, "Driver": "bridge"})
			}
		}
		return formatted(last(f, "format"), rows...)
	case "inspect":
		format := last(f, "format", "f")
		var data []any
		for _, name := range rest {
			n := r.networkByName(name)
			if n == nil {
				found, _, _ := formatted(format, data...)
				return found, "Error: No such network: " + name + "\n", 1
			}
			data = append(data, r.networkData(n))
		}
		return formatted(format, data...)
	case "create":
		if len(rest) != 1 {
			return "", "docker network create takes one name\n", 1
		}
		if r.networkByName(rest[0]) != nil {
			return "", fmt.Sprintf("Error response from daemon: network with name %s already exists\n", rest[0]), 1
		}
		n := &network{name: rest[0], id: newID(), subnet: last(f, "subnet"), options: keyValues(f["o"])}
		r.networks[n.name] = n
		return n.id + "\n", "", 0
	case "rm":
		for _, name := range rest {
			n := r.networkByName(name)
			if n == nil {
				return "", "Error: No such network: " + name + "\n", 1
			}
			for _, c := range r.containers {
				if c.Network == n.name {
					return "", fmt.Sprintf("Error response from daemon: error while removing network: network %s id %s has active endpoints\n", n.name, n.id), 1
				}
			}
			delete(r.networks, n.name)
		}
		return strings.Join(rest, "\n") + "\n", "", 0
	}
	return "", fmt.Sprintf("docker: 'network %s' is not a command the kb-bench test double answers\n", args[0]), 125
}

func (r *Runtime) networkByName(name string) *network {
	for _, n := range r.networks {
		if n.name == name || n.id == name || (len(name) >= 12 && strings.HasPrefix(n.id, name)) {
			return n
		}
	}
	return nil
}

func (r *Runtime) networkData(n *network) map[string]any {
	containers := map[string]map[string]string{}
	for _, c := range r.containers {
		if c.Network == n.name {
			containers[c.ID] = map[string]string{"Name": c.Name}
		}
	}
	var ipam []map[string]string
	if n.subnet != "" {
		ipam = append(ipam, map[string]string{"Subnet": n.subnet})
	}
	return map[string]any{"Name": n.name, "Id": n.id, "Containers": containers, "Options": n.options, "IPAM": map[string]any{"Config": ipam}}
}

var runValued = map[string]bool{
	"name": true, "hostname": true, "label": true, "l": true, "security-opt": true, "tmpfs": true,
	"volume": true, "v": true, "e": true, "env": true, "net": true, "network": true, "device": true,
	"publish": true, "p": true, "restart": true, "cgroupns": true, "sysctl": true, "userns": true, "entrypoint": true,
	"runtime": true,
}

func (r *Runtime) run(args []string, passed map[string]string) (string, string, int) {
	f, rest := flags(args, runValued, true)
	name := last(f, "name")
	if name == "" || len(rest) == 0 {
		return "", "docker: the double needs run --name NAME ... IMAGE\n", 125
	}
	if _, ok := r.containers[name]; ok {
		return "", fmt.Sprintf("docker: Error response from daemon: Conflict. The container name \"/%s\" is already in use.\n", name), 125
	}
	image := rest[0]
	var pulled string
	if !r.images[image] {
		if !slices.Contains(r.o.Registry, image) {
			return "", fmt.Sprintf("Unable to find image '%s' locally\ndocker: %s.\n", image, RegistryError), 125
		}
		r.images[image] = true
		pulled = fmt.Sprintf("Unable to find image '%s' locally\n", image)
	}
	netName := cmp.Or(last(f, "net", "network"), "bridge")
	if r.networkByName(netName) == nil {
		return "", fmt.Sprintf("docker: Error response from daemon: network %s not found.\n", netName), 125
	}
	c := &Container{Name: name, ID: newID(), Image: image, RunArgs: slices.Clone(args), Labels: keyValues(append(f["label"], f["l"]...)), Network: netName, Files: map[string]string{}, Env: map[string]string{}}
	for _, e := range append(f["e"], f["env"]...) {
		if k, v, ok := strings.Cut(e, "="); ok {
			c.Env[k] = v
		} else if v, ok := passed[e]; ok {
			c.Env[e] = v
		}
	}
	for _, p := range append(f["publish"], f["p"]...) {
		c.Publish = append(c.Publish, p)
		if r.o.Forward == "" {
			continue
		}
		host, port, _ := splitPublish(p)
		l, err := net.Listen("tcp", net.JoinHostPort(host, port))
		if err != nil {
			for _, l := range c.listeners {
				l.Close()
			}
			return "", fmt.Sprintf("docker: Error response from daemon: driver failed programming external connectivity on endpoint %s: Bind for %s failed: port is already allocated.\n", name, net.JoinHostPort(host, port)), 125
		}
		c.listeners = append(c.listeners, l)
		r.wg.Go(func() { r.forward(l) })
	}
	r.nextIP++
	c.ip4 = fmt.Sprintf("172.18.0.%d", r.nextIP+1)
	c.ip6 = fmt.Sprintf("fc00:f853:ccd:e793::%d", r.nextIP+1)
	if role := c.Labels[RoleLabel]; role == "control-plane" || role == "worker" {
		_, version := splitImage(image) // v1.37.0 of kindest/node:v1.37.0
		c.Files["/kind/version"] = version + "\n"
		c.Files["/kind/manifests/default-cni.yaml"] = cniManifest
		c.Files["/kind/manifests/default-storage.yaml"] = storageManifest
		c.Files["/etc/containerd/config.toml"] = containerdConfig
	}
	r.containers[name] = c
	return c.ID + "\n", pulled, 0
}

// forward accepts connections on a published port and pipes each to
// Options.Forward, as docker's userland proxy does.
func (r *Runtime) forward(l net.Listener) {
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", r.o.Forward)
		if err != nil {
			in.Close()
			continue
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		r.conns[in], r.conns[out] = true, true
		r.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
			r.mu.Lock()
			delete(r.conns, dst)
			delete(r.conns, src)
			r.mu.Unlock()
		}
		r.wg.Go(func() { pipe(in, out) })
		r.wg.Go(func() { pipe(out, in) })
	}
}

func (r *Runtime) logs(args []string) (string, string, int) {
	_, rest := flags(args, nil, false)
	if len(rest) != 1 {
		return "", "docker logs takes one container\n", 1
	}
	if _, ok := r.containers[rest[0]]; !ok {
		return "", "Error: No such container: " + rest[0] + "\n", 1
	}
	return "INFO: running in a kb-bench test double, not a real node\nsystemd 252 running in system mode\n[  OK  ] Reached target multi-user.target - Multi-User System.\n", "", 0
}

func (r *Runtime) exec(args []string, stdin []byte) (string, string, int) {
	_, rest := flags(args, map[string]bool{"e": true, "env": true, "w": true, "u": true}, true)
	if len(rest) < 2 {
		return "", "docker exec needs a container and a command\n", 1
	}
	c, ok := r.containers[rest[0]]
	if !ok {
		return "", "Error: No such container: " + rest[0] + "\n", 1
	}
	cmd := rest[1:]
	switch {
	case cmd[0] == "cat" && len(cmd) == 2:
		content, ok := c.Files[cmd[1]]
		if !ok {
			return "", fmt.Sprintf("cat: %s: No such file or directory\n", cmd[1]), 1
		}
		return content, "", 0
	case cmd[0] == "cp" && len(cmd) == 3 && cmd[1] == "/dev/stdin":
		c.Files[cmd[2]] = string(stdin)
		return "", "", 0
	case cmd[0] == "kubeadm" && len(cmd) > 1 && cmd[1] == "init":
		c.Files["/etc/kubernetes/admin.conf"] = cmp.Or(string(r.o.AdminKubeconfig), defaultAdmin)
		for _, p := range []string{"ca", "front-proxy-ca", "etcd/ca"} {
			c.Files["/etc/kubernetes/pki/"+p+".crt"] = "certificate of the kb-bench test double\n"
			c.Files["/etc/kubernetes/pki/"+p+".key"] = "key of the kb-bench test double\n"
		}
		c.Files["/etc/kubernetes/pki/sa.pub"] = "public key of the kb-bench test double\n"
		c.Files["/etc/kubernetes/pki/sa.key"] = "key of the kb-bench test double\n"
		return "[init] Using Kubernetes version: " + strings.TrimSpace(c.Files["/kind/version"]) + "\nYour Kubernetes control-plane has initialized successfully!\n", "", 0
	case cmd[0] == "kubeadm" && len(cmd) > 1 && cmd[1] == "join":
		return "This node has joined the cluster and a new control plane instance was created\n", "", 0
	case cmd[0] == "kubectl":
		if slices.Contains(cmd, "get") && slices.Contains(cmd, "nodes") {
			return "'True'", "", 0
		}
		return "", "", 0
	case cmd[0] == "mkdir" || cmd[0] == "sh" || cmd[0] == "bash" || cmd[0] == "true":
		return "", "", 0
	}
	return "", fmt.Sprintf("OCI runtime exec failed: exec: %q: executable file not found in $PATH (kb-bench test double)\n", cmd[0]), 126
}

// psRow is a row of `docker ps`, for its --format templates.
type psRow struct {
	ID, Names, Image string
	labels           map[string]string
}

// Label is the value of a label, as in {{.Label "io.x-k8s.kind.cluster"}}.
func (p psRow) Label(name string) string { return p.labels[name] }

func (r *Runtime) ps(args []string) (string, string, int) {
	f, _ := flags(args, formatFlags, false)
	format := cmp.Or(last(f, "format"), "{{.ID}}\t{{.Image}}\t{{.Names}}")
	if _, quiet := f["q"]; quiet {
		format = "{{.ID}}"
	}
	var rows []any
	for _, name := range sortedKeys(r.containers) {
		if c := r.containers[name]; matches(c, f["filter"]) {
			rows = append(rows, psRow{ID: c.ID[:12], Names: c.Name, Image: c.Image, labels: c.Labels})
		}
	}
	return formatted(format, rows...)
}

func matches(c *Container, filters []string) bool {
	for _, flt := range filters {
		k, v, _ := strings.Cut(flt, "=")
		switch k {
		case "label":
			lk, lv, withValue := strings.Cut(v, "=")
			got, ok := c.Labels[lk]
			if !ok || (withValue && got != lv) {
				return false
			}
		case "name":
			if !strings.Contains(c.Name, v) {
				return false
			}
		}
	}
	return true
}

func (r *Runtime) rm(args []string) (string, string, int) {
	_, names := flags(args, nil, false)
	var out, errs strings.Builder
	for _, n := range names {
		c, ok := r.containers[n]
		if !ok {
			fmt.Fprintf(&errs, "Error: No such container: %s\n", n)
			continue
		}
		for _, l := range c.listeners {
			l.Close()
		}
		delete(r.containers, n)
		out.WriteString(n + "\n")
	}
	if errs.Len() > 0 {
		return out.String(), errs.String(), 1
	}
	return out.String(), "", 0
}

// sortedKeys returns the names of a map of networks or containers, sorted.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// keyValues is the map of KEY=VALUE options (--label, --opt).
func keyValues(options []string) map[string]string {
	m := map[string]string{}
	for _, o := range options {
		k, v, _ := strings.Cut(o, "=")
		m[k] = v
	}
	return m
}

func newID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// The manifests a kind node image holds, shortened: kind templates the pod
// subnet into the CNI manifest and patches the control-plane endpoint in.
const cniManifest = `# kindnetd, as a kind node image holds it (shortened by the kb-bench test double)
# would you kindly template this file
# would you kindly patch this file
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kindnet
  namespace: kube-system
spec:
  selector:
    matchLabels:
      app: kindnet
  template:
    metadata:
      labels:
        app: kindnet
    spec:
      containers:
      - name: kindnet-cni
        image: docker.io/kindest/kindnetd:v20250512-df8de77b
        env:
        - name: POD_SUBNET
          value: {{ .PodSubnet }}
`

const storageManifest = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: rancher.io/local-path
`

// containerdConfig is a node's containerd configuration, shortened from
// kind's base image.
const containerdConfig = `version = 2

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  restrict_oom_score_adj = false
`

// defaultAdmin is an admin.conf for a server nobody serves.
const defaultAdmin = `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: ""
    server: https://kind-node:6443
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: kubernetes-admin
  name: kubernetes-admin@kubernetes
current-context: kubernetes-admin@kubernetes
users:
- name: kubernetes-admin
  user:
    token: kb-bench-test-double
`
