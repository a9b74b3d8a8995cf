package etcdstore

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSFiles are PEM files: the CA that signed the servers' certificates
// (empty: the system's roots), and the client's certificate and key
// (both or neither).
type TLSFiles struct {
	CAFile   string
	CertFile string
	KeyFile  string
}

func (f *TLSFiles) clientConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		b, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", f.CAFile)
		}
		tc.RootCAs = pool
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("a client certificate needs both its certificate and its key file")
	}
	if f.CertFile != "" {
		if err := privateFile(f.KeyFile); err != nil {
			return nil, err
		}
		pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s and key %s: %w", f.CertFile, f.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// privateFile refuses a key or password file others can read.
func privateFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is mode %o, readable by others (run `chmod 600 %s`)", path, fi.Mode().Perm(), path)
	}
	return nil
}

// ReadPasswordFile reads a password from a file only its owner can read,
// without its trailing newline.
func ReadPasswordFile(path string) (string, error) {
	if err := privateFile(path); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	pw := string(b)
	for len(pw) > 0 && (pw[len(pw)-1] == '\n' || pw[len(pw)-1] == '\r') {
		pw = pw[:len(pw)-1]
	}
	if pw == "" {
		return "", fmt.Errorf("password file %s is empty", path)
	}
	return pw, nil
}
