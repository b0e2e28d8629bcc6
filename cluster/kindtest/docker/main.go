// Command docker is the command-line half of kindtest's docker double: put
// first on PATH, it sends its arguments and its standard input to the
// double's engine (the test process, on the unix socket named by
// $KB_BENCH_DOCKER_DOUBLE) and prints what the engine answers, exiting
// with its status. It is test code: kb-bench never ships it.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

func main() {
	os.Exit(run())
}

func run() int {
	sock := os.Getenv("KB_BENCH_DOCKER_DOUBLE")
	if sock == "" {
		fmt.Fprintln(os.Stderr, "docker (kb-bench test double): KB_BENCH_DOCKER_DOUBLE is not set")
		return 125
	}
	// Commands without input get /dev/null from os/exec: EOF at once.
	stdin, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "docker (kb-bench test double): reading stdin: %v\n", err)
		return 125
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Cannot connect to the Docker daemon (kb-bench test double at %s): %v\n", sock, err)
		return 1
	}
	defer conn.Close()
	if err := json.NewEncoder(conn).Encode(struct {
		Args  []string
		Stdin []byte
		Env   map[string]string
	}{os.Args[1:], stdin, passedEnv(os.Args[1:])}); err != nil {
		fmt.Fprintf(os.Stderr, "docker (kb-bench test double): %v\n", err)
		return 125
	}
	var reply struct {
		Stdout, Stderr []byte
		Code           int
	}
	if err := json.NewDecoder(conn).Decode(&reply); err != nil {
		fmt.Fprintf(os.Stderr, "docker (kb-bench test double): no answer: %v\n", err)
		return 125
	}
	_, _ = os.Stdout.Write(reply.Stdout)
	_, _ = os.Stderr.Write(reply.Stderr)
	return reply.Code
}

// passedEnv is what `-e NAME` (no value) passes to a container, as docker
// does: NAME's value in this program's environment, when set.
func passedEnv(args []string) map[string]string {
	env := map[string]string{}
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "-e" && args[i] != "--env" || strings.Contains(args[i+1], "=") {
			continue
		}
		if v, ok := os.LookupEnv(args[i+1]); ok {
			env[args[i+1]] = v
		}
	}
	return env
}
