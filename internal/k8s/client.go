package k8s

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/spec"
)

// ClientConfig returns a copy of base with the Spec's client settings applied:
// QPS and Burst (a negative QPS means no client-side limit), content type
// and user agent. ContentDefault leaves the content type to client-go, as
// real clients do: its typed clients then send protobuf for built-in types
// (rest.Request.UseProtobufAsDefault) and JSON for apply patches.
func ClientConfig(base *rest.Config, c spec.Client, version string) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.QPS = c.QPS
	cfg.Burst = c.Burst
	switch c.ContentType {
	case spec.ContentProtobuf:
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	case spec.ContentJSON:
		cfg.ContentType = runtime.ContentTypeJSON
		cfg.AcceptContentTypes = runtime.ContentTypeJSON
	case spec.ContentCBOR:
		allowCBOR()
		cfg.ContentType = runtime.ContentTypeCBOR
		cfg.AcceptContentTypes = runtime.ContentTypeCBOR + "," + runtime.ContentTypeJSON
	default:
		cfg.ContentType, cfg.AcceptContentTypes = "", ""
	}
	cfg.UserAgent = c.UserAgent
	if cfg.UserAgent == "" {
		cfg.UserAgent = "kb-bench/" + version
	}
	return cfg
}

// allowCBOR turns on client-go's ClientsAllowCBOR gate (alpha, off by
// default), without which client-go silently sends JSON for a CBOR config.
// It is process-wide, and only allows: each config still chooses.
func allowCBOR() {
	if g, ok := clientfeatures.FeatureGates().(interface {
		Set(clientfeatures.Feature, bool) error
	}); ok {
		_ = g.Set(clientfeatures.ClientsAllowCBOR, true)
	}
}
