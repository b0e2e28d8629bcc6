package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// adminUser is the static-token user kb-bench acts as; system:masters makes
// it cluster-admin under RBAC, as a real cluster's admin kubeconfig is.
const (
	adminUser  = "kb-bench-admin"
	adminGroup = "system:masters"
)

// credentials is what the local apiserver needs to serve TLS, sign service
// account tokens and authenticate the admin, written under dir.
type credentials struct {
	caPEM []byte
	token string
	// Files the apiserver reads.
	caFile, certFile, keyFile       string
	saKeyFile, saPubFile, tokenFile string
}

// writeCredentials generates a CA, a serving certificate for the loopback
// addresses, a service-account signing key and an admin token into dir.
func writeCredentials(dir string) (*credentials, error) {
	caDER, caKey, err := newCert("CA", &x509.Certificate{
		Subject:               pkix.Name{CommonName: "kb-bench local CA"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil, nil)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	servingDER, servingKey, err := newCert("serving", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)},
	}, ca, caKey)
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 32)
	rand.Read(tok) // never fails

	c := &credentials{
		caPEM:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		token:     hex.EncodeToString(tok),
		caFile:    filepath.Join(dir, "ca.crt"),
		certFile:  filepath.Join(dir, "apiserver.crt"),
		keyFile:   filepath.Join(dir, "apiserver.key"),
		saKeyFile: filepath.Join(dir, "sa.key"),
		saPubFile: filepath.Join(dir, "sa.pub"),
		tokenFile: filepath.Join(dir, "tokens.csv"),
	}
	servingKeyDER, err := x509.MarshalECPrivateKey(servingKey)
	if err != nil {
		return nil, err
	}
	saKeyDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	// In a fixed order, so that a failed write names the same file each time.
	for _, f := range []struct {
		path string
		data []byte
	}{
		{c.caFile, c.caPEM},
		{c.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servingDER})},
		{c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: servingKeyDER})},
		{c.saKeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saKeyDER})},
		{c.saPubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
		// token,user,uid,"group1,group2"
		{c.tokenFile, fmt.Appendf(nil, "%s,%s,%s,\"%s\"\n", c.token, adminUser, adminUser, adminGroup)},
	} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// newCert makes a key and a certificate for it from tmpl, valid from an
// hour ago for a year, signed by parent's key (self-signed when parent is
// nil), and returns the certificate's DER form and the key.
func newCert(what string, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	now := time.Now()
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62)) // never fails
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial, now.Add(-time.Hour), now.AddDate(1, 0, 0)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the %s certificate: %w", what, err)
	}
	return der, key, nil
}
