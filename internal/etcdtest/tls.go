package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// TLSFiles are the PEM files of a TLS cluster: the CA that signed the
// server and the client certificate, the client's certificate and key,
// and a second CA that signed nothing of this cluster's.
type TLSFiles struct {
	CA, Cert, Key string
	OtherCA       string

	serverCert, serverKey string
}

// ClientConfig is a client TLS config trusting CA with the client
// certificate.
func (f *TLSFiles) ClientConfig() (*tls.Config, error) {
	return transport.TLSInfo{CertFile: f.Cert, KeyFile: f.Key, TrustedCAFile: f.CA}.ClientConfig()
}

type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func (f *TLSFiles) generate(dir string) error {
	ca, err := newCA(filepath.Join(dir, "ca.pem"), "etcdtest CA")
	if err != nil {
		return err
	}
	if _, err := newCA(filepath.Join(dir, "other-ca.pem"), "etcdtest other CA"); err != nil {
		return err
	}
	f.CA, f.OtherCA = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "other-ca.pem")
	f.serverCert, f.serverKey = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	f.Cert, f.Key = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "etcdtest server"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if err := ca.issue(server, f.serverCert, f.serverKey); err != nil {
		return err
	}
	client := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "etcdtest client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return ca.issue(client, f.Cert, f.Key)
}

func newCA(path, name string) (*issuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &issuer{cert: cert, key: key}, writePEM(path, "CERTIFICATE", der)
}

func (ca *issuer) issue(tmpl *x509.Certificate, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(365*24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(keyPath, "EC PRIVATE KEY", kb)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
