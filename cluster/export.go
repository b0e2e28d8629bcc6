package cluster

import (
	"errors"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig renders cfg (a target's connection: server, TLS, credentials)
// as a kubeconfig, for another kb-bench process to reach the same
// apiserver as the same user. Write it readable only by its owner: it
// holds the credentials.
func Kubeconfig(cfg *rest.Config) ([]byte, error) { return kubeconfigNamed(cfg, "kb-bench") }

// kubeconfigNamed is Kubeconfig with name as its cluster, user and context.
func kubeconfigNamed(cfg *rest.Config, name string) ([]byte, error) {
	if cfg.Transport != nil || cfg.WrapTransport != nil || cfg.Dial != nil {
		return nil, errors.New("the target's connection uses a custom transport, which a kubeconfig cannot carry")
	}
	var exec *clientcmdapi.ExecConfig
	if cfg.ExecProvider != nil {
		e := *cfg.ExecProvider
		e.Config = nil // runtime.Object of the exec plugin's cluster info; not written
		exec = &e
	}
	out := clientcmdapi.NewConfig()
	out.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host + cfg.APIPath,
		CertificateAuthority:     cfg.CAFile,
		CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	out.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificate:     cfg.CertFile,
		ClientCertificateData: cfg.CertData,
		ClientKey:             cfg.KeyFile,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
		TokenFile:             cfg.BearerTokenFile,
		Username:              cfg.Username,
		Password:              cfg.Password,
		Impersonate:           cfg.Impersonate.UserName,
		ImpersonateUID:        cfg.Impersonate.UID,
		ImpersonateGroups:     cfg.Impersonate.Groups,
		ImpersonateUserExtra:  cfg.Impersonate.Extra,
		Exec:                  exec,
		AuthProvider:          cfg.AuthProvider,
	}
	out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	out.CurrentContext = name
	return clientcmd.Write(*out)
}
