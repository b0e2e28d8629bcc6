package cluster

import (
	"net/http"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// A shard process reaches the same apiserver, as the same user, through
// the kubeconfig written for it.
func TestKubeconfigCarriesTheConnection(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "secret",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key"), ServerName: "kube"}}
	b, err := Kubeconfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Host != cfg.Host || got.BearerToken != "secret" || string(got.CAData) != "ca" || string(got.CertData) != "cert" ||
		string(got.KeyData) != "key" || got.ServerName != "kube" {
		t.Errorf("read back %+v", got)
	}
	cfg.Transport = http.DefaultTransport
	if _, err := Kubeconfig(cfg); err == nil {
		t.Error("a custom transport was silently dropped")
	}
}
