package kubelettest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Docker runs the docker CLI against the local daemon.
type Docker struct {
	// Path is the docker executable.
	Path string
}

// run runs docker with args and returns its trimmed standard output; an
// error quotes its standard error.
func (d Docker) run(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, d.Path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// ServerVersion is the daemon's version; an error says the daemon cannot
// be reached.
func (d Docker) ServerVersion(ctx context.Context) (string, error) {
	return d.run(ctx, "version", "--format", "{{.Server.Version}}")
}

// Load loads an image tarball and returns the image it names.
func (d Docker) Load(ctx context.Context, tarball string) (string, error) {
	out, err := d.run(ctx, "load", "--quiet", "--input", tarball)
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(out, "\n") {
		if ref, ok := strings.CutPrefix(line, "Loaded image: "); ok {
			return ref, nil
		}
	}
	return "", fmt.Errorf("docker load %s named no image: %q", tarball, out)
}

// RemoveImage removes an image's tag (and the image, if it was the last).
func (d Docker) RemoveImage(ctx context.Context, ref string) error {
	_, err := d.run(ctx, "image", "rm", ref)
	return err
}

// ImagePresent says whether the daemon has an image.
func (d Docker) ImagePresent(ctx context.Context, ref string) (bool, error) {
	out, err := d.run(ctx, "image", "ls", "--quiet", ref)
	return out != "", err
}

// ImageLabel returns a label of a local image.
func (d Docker) ImageLabel(ctx context.Context, ref, label string) (string, error) {
	out, err := d.run(ctx, "image", "inspect", "--format", "{{json .Config.Labels}}", ref)
	if err != nil {
		return "", err
	}
	var labels map[string]string
	if err := json.Unmarshal([]byte(out), &labels); err != nil {
		return "", fmt.Errorf("the labels of image %s: %w", ref, err)
	}
	return labels[label], nil
}

// Create creates a container (docker create ARGS) and returns its id.
func (d Docker) Create(ctx context.Context, args []string) (string, error) {
	return d.run(ctx, append([]string{"create"}, args...)...)
}

// Start starts a created container.
func (d Docker) Start(ctx context.Context, id string) error {
	_, err := d.run(ctx, "start", id)
	return err
}

// Wait waits for a container to exit and returns its exit code.
func (d Docker) Wait(ctx context.Context, id string) (int, error) {
	out, err := d.run(ctx, "wait", id)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// Info is what docker inspect says of a container.
type Info struct {
	// Image is the id of its image.
	Image string
	State State
}

// State is a container's state.
type State struct {
	Running    bool
	OOMKilled  bool
	ExitCode   int
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time
}

// Inspect returns a container's image and state.
func (d Docker) Inspect(ctx context.Context, id string) (Info, error) {
	out, err := d.run(ctx, "container", "inspect", "--format", "{{json .}}", id)
	if err != nil {
		return Info{}, err
	}
	var info Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return Info{}, fmt.Errorf("inspecting container %s: %w", id, err)
	}
	return info, nil
}

// Logs returns the last lines of a container's output, its standard
// output and error together.
func (d Docker) Logs(ctx context.Context, id string, lines int) ([]byte, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, d.Path, "logs", "--tail", strconv.Itoa(lines), id)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("docker logs %s: %w: %s", id, err, out.Bytes())
	}
	return out.Bytes(), nil
}

// Stop stops a container: SIGTERM, then SIGKILL after its stop timeout.
func (d Docker) Stop(ctx context.Context, id string) error {
	_, err := d.run(ctx, "stop", id)
	return err
}

// Kill sends a running container SIGKILL.
func (d Docker) Kill(ctx context.Context, id string) error {
	_, err := d.run(ctx, "kill", "--signal", "KILL", id)
	return err
}

// Remove removes containers, running or not.
func (d Docker) Remove(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := d.run(ctx, append([]string{"rm", "--force", "--volumes"}, ids...)...)
	return err
}

// Containers lists the ids of the containers, running or not, that carry
// label=value.
func (d Docker) Containers(ctx context.Context, label, value string) ([]string, error) {
	out, err := d.run(ctx, "ps", "--all", "--quiet", "--no-trunc", "--filter", "label="+label+"="+value)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Fields(out), nil
}
