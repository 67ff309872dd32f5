package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// tlsConfig is the client's TLS from --tls-ca (the CA to trust), --tls-cert and --tls-key (a
// client certificate, for mTLS); nil without --tls-ca, which means plaintext.
func tlsConfig(get func(name, def string) string) *tls.Config {
	ca := get("tls-ca", "")
	if ca == "" {
		return nil
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		fail(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fail(fmt.Errorf("--tls-ca %s: no PEM certificate", ca))
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert := get("tls-cert", ""); cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, get("tls-key", ""))
		if err != nil {
			fail(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}
