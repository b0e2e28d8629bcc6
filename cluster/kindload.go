package cluster

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"

	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
)

// KindImage is an image to put into the nodes of a kind cluster.
type KindImage struct {
	// Ref names it, REPOSITORY:TAG, as the pods name it.
	Ref string
	// ID is its config digest ("sha256:..."), the image id the nodes'
	// container runtime reports for Ref once it holds the image.
	ID string
	// Archive writes it in `docker save`'s format, which
	// `kind load image-archive` takes.
	Archive func(io.Writer) error
}

// KindLoadImage puts img into every node of the kind cluster name ("":
// kind's default) whose runtime does not already hold Ref as ID, the way
// `kind load image-archive` does (ctr images import on the node: no
// registry), and returns the nodes it loaded, none when every node held
// the image already. A done ctx stops a load under way.
func KindLoadImage(ctx context.Context, name string, img KindImage, getenv func(string) string) (loaded []string, err error) {
	name = cmp.Or(name, kindcluster.DefaultName)
	p, err := kindProviderFor(getenvOr(getenv))
	if err != nil {
		return nil, fmt.Errorf("loading %s into kind cluster %s: %w", img.Ref, name, err)
	}
	nodes, err := p.ListInternalNodes(name)
	if err != nil {
		return nil, fmt.Errorf("loading %s into kind cluster %s: listing its nodes: %s", img.Ref, name, runtimeError(err))
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("loading %s into kind cluster %s: the cluster has no nodes (`kind get nodes --name %s`)", img.Ref, name, name)
	}
	var archive []byte // written once, for the first node without the image
	for _, n := range nodes {
		if id, err := nodeutils.ImageID(n, img.Ref); err == nil && id == img.ID {
			continue
		}
		if archive == nil {
			var buf bytes.Buffer
			if err := img.Archive(&buf); err != nil {
				return loaded, fmt.Errorf("writing the image archive of %s: %w", img.Ref, err)
			}
			archive = buf.Bytes()
		}
		if err := nodeutils.LoadImageArchive(n, ctxReader{ctx, bytes.NewReader(archive)}); err != nil {
			if ctx.Err() != nil {
				return loaded, fmt.Errorf("loading %s into node %s: %w", img.Ref, n, context.Cause(ctx))
			}
			return loaded, fmt.Errorf("loading %s into node %s: %s (`kind load image-archive` does the same)", img.Ref, n, runtimeError(err))
		}
		// What the kubelet will find: the tag resolves to this image.
		id, err := nodeutils.ImageID(n, img.Ref)
		if err != nil {
			return loaded, fmt.Errorf("node %s: the image %s was imported, but crictl does not find it: %s", n, img.Ref, runtimeError(err))
		}
		if id != img.ID {
			return loaded, fmt.Errorf("node %s: the image %s was imported, but the node's runtime reports image %s for it, not %s", n, img.Ref, id, img.ID)
		}
		loaded = append(loaded, n.String())
	}
	return loaded, nil
}

// ctxReader ends a read once its context is done, which ends the import
// that reads it.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
