package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// Self-signed certificates in a Secret of the real API server: the first
// Ensure makes and stores them; a second (another replica) serves the same
// pair; a host added later gets a new serving certificate from the same CA
// (the registered caBundle stays good); one near its end is renewed; two
// replicas starting at once end with one pair between them.
func TestIntegrationSelfSigned(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	ctx := context.Background()
	log := logrus.New()
	log.SetOutput(io.Discard)
	hosts := ServiceHosts("webhook", ns)
	wider := append([]string{"127.0.0.1"}, hosts...)
	// replica is an operator's SelfSigned for the test's namespace.
	replica := func(secret string, hosts []string) *SelfSigned {
		return &SelfSigned{Dynamic: c.Dynamic, Namespace: ns, Secret: secret, Hosts: hosts, Log: log}
	}
	first, err := replica("certs", hosts).Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(first.CA) {
		t.Fatal("the CA is not PEM")
	}
	pair, err := tls.X509KeyPair(first.Cert, first.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	for _, h := range hosts {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: pool}); err != nil {
			t.Errorf("the serving certificate for %s: %v", h, err)
		}
	}

	again, err := replica("certs", hosts).Ensure(ctx)
	if err != nil || !bytes.Equal(again.Cert, first.Cert) || !bytes.Equal(again.Key, first.Key) {
		t.Errorf("a second replica did not get the stored pair (%v)", err)
	}

	added, err := replica("certs", wider).Ensure(ctx)
	if err != nil || bytes.Equal(added.Cert, first.Cert) || !bytes.Equal(added.CA, first.CA) {
		t.Errorf("a new host: want a new certificate from the same CA (%v)", err)
	}
	leaf, _ = parseCert(added.Cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool}); err != nil || leaf.VerifyHostname("127.0.0.1") != nil {
		t.Errorf("the certificate for 127.0.0.1: %v", err)
	}

	later := replica("certs", wider)
	later.now = func() time.Time { return time.Now().Add(servingLifetime - renewBefore/2) }
	renewed, err := later.Ensure(ctx)
	if err != nil || bytes.Equal(renewed.Cert, added.Cert) || !bytes.Equal(renewed.CA, first.CA) {
		t.Errorf("a certificate within %s of its end: want a new one from the same CA (%v)", renewBefore, err)
	}

	var wg sync.WaitGroup
	got := make([]*Certificates, 2)
	errs := make([]error, 2)
	for i := range got {
		wg.Go(func() {
			got[i], errs[i] = replica("race", hosts).Ensure(ctx)
		})
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("two replicas at once: %v, %v", errs[0], errs[1])
	}
	if !bytes.Equal(got[0].CA, got[1].CA) || !bytes.Equal(got[0].Cert, got[1].Cert) {
		t.Errorf("two replicas starting at once serve different certificates")
	}
}
