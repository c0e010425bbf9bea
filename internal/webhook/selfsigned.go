package webhook

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The lifetimes of self-signed certificates. A serving certificate is made
// again when less than renewBefore of it is left; the CA only when the
// Secret holds none that can sign (its caBundle is registered at start-up).
const (
	caLifetime      = 10 * 365 * 24 * time.Hour
	servingLifetime = 365 * 24 * time.Hour
	renewBefore     = 30 * 24 * time.Hour
)

// The keys of the certificate Secret: a kubernetes.io/tls Secret with the
// CA and its key besides.
const (
	secretCA    = "ca.crt"
	secretCAKey = "ca.key"
	secretCert  = "tls.crt"
	secretKey   = "tls.key"
)

var secretResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// DefaultCertSecret is the Secret of self-signed certificates when
// --webhook-cert-secret is not given (start's, and what rbac grants).
const DefaultCertSecret = "hook-operator-webhook-certs"

// Certificates are the PEM files of a webhook server.
type Certificates struct {
	CA, Cert, Key []byte
}

// SelfSigned keeps the webhook server's certificates in a Secret, made by
// the operator itself: a CA, and a serving certificate it signs for Hosts
// (DNS names or IP addresses). Replicas share the Secret, so they serve
// certificates of the same CA and the registered caBundle fits them all.
type SelfSigned struct {
	Dynamic           dynamic.Interface
	Namespace, Secret string
	Hosts             []string
	Log               logrus.FieldLogger
	now               func() time.Time
}

// Ensure returns the certificates for s.Hosts from the Secret, making what
// is missing: a new serving certificate when the stored one does not cover
// every host or expires within renewBefore, signed by the stored CA when
// it can sign, else by a new CA. A Secret another replica writes at the
// same moment wins, and is read again. Nothing of the keys is logged.
func (s *SelfSigned) Ensure(ctx context.Context) (*Certificates, error) {
	res := s.Dynamic.Resource(secretResource).Namespace(s.Namespace)
	for attempt := 0; attempt < 5; attempt++ {
		cur, err := res.Get(ctx, s.Secret, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read the webhook certificate Secret %s/%s: %w", s.Namespace, s.Secret, err)
		}
		var stored map[string][]byte
		if err == nil {
			stored = secretData(cur)
			if c, ok := s.usable(stored); ok {
				return c, nil
			}
		}
		made, caKey, err := s.make(stored)
		if err != nil {
			return nil, err
		}
		data := map[string]any{
			secretCA: b64(made.CA), secretCAKey: b64(caKey), secretCert: b64(made.Cert), secretKey: b64(made.Key),
		}
		if cur == nil {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
				"metadata": map[string]any{"name": s.Secret, "namespace": s.Namespace,
					"labels": map[string]any{managedBy: FieldManager}},
				"data": data,
			}}
			_, err = res.Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager})
		} else {
			cur.Object["data"] = data
			_, err = res.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
		}
		switch {
		case err == nil:
			s.Log.WithFields(logrus.Fields{"secret": s.Namespace + "/" + s.Secret, "hosts": s.Hosts}).Info("webhook certificate made and stored")
			return made, nil
		case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
			continue // another replica wrote it first: read theirs
		default:
			return nil, fmt.Errorf("store the webhook certificate in Secret %s/%s: %w", s.Namespace, s.Secret, err)
		}
	}
	return nil, fmt.Errorf("the webhook certificate Secret %s/%s kept changing while it was written", s.Namespace, s.Secret)
}

func (s *SelfSigned) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// usable returns the stored certificates when they serve every host for
// longer than renewBefore and the CA signed them.
func (s *SelfSigned) usable(stored map[string][]byte) (*Certificates, bool) {
	ca, _, err := parseCA(stored)
	if err != nil {
		return nil, false
	}
	if _, err := tls.X509KeyPair(stored[secretCert], stored[secretKey]); err != nil {
		return nil, false
	}
	cert, err := parseCert(stored[secretCert])
	if err != nil || cert.CheckSignatureFrom(ca) != nil || cert.NotAfter.Sub(s.clock()) < renewBefore {
		return nil, false
	}
	for _, h := range s.Hosts {
		if cert.VerifyHostname(h) != nil {
			return nil, false
		}
	}
	return &Certificates{CA: stored[secretCA], Cert: stored[secretCert], Key: stored[secretKey]}, true
}

// make signs a new serving certificate with the stored CA, or with a new
// CA when the stored one cannot sign for long enough, and returns the
// certificates and the CA's key (PEM).
func (s *SelfSigned) make(stored map[string][]byte) (*Certificates, []byte, error) {
	now := s.clock()
	ca, caKey, err := parseCA(stored)
	caPEM, caKeyPEM := stored[secretCA], stored[secretCAKey]
	if err != nil || ca.NotAfter.Sub(now) < servingLifetime {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "hook-operator webhook CA"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(caLifetime),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return nil, nil, err
		}
		if ca, err = x509.ParseCertificate(der); err != nil {
			return nil, nil, err
		}
		caKey = key
		caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		if caKeyPEM, err = keyPEM(key); err != nil {
			return nil, nil, err
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: s.Hosts[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(servingLifetime),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range s.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	kp, err := keyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return &Certificates{CA: caPEM, Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), Key: kp}, caKeyPEM, nil
}

// ServiceHosts are the DNS names a Service is reached by from the API
// server.
func ServiceHosts(service, namespace string) []string {
	return []string{service + "." + namespace + ".svc", service, service + "." + namespace, service + "." + namespace + ".svc.cluster.local"}
}

func parseCA(stored map[string][]byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	ca, err := parseCert(stored[secretCA])
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(stored[secretCAKey])
	if block == nil {
		return nil, nil, errors.New("no CA key")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, err
	}
	if !ca.IsCA || !key.PublicKey.Equal(ca.PublicKey) {
		return nil, nil, errors.New("the CA key does not fit the CA")
	}
	return ca, key, nil
}

func parseCert(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func keyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// secretData decodes a Secret's data.
func secretData(u *unstructured.Unstructured) map[string][]byte {
	out := map[string][]byte{}
	data, _ := u.Object["data"].(map[string]any)
	for k, v := range data {
		if s, ok := v.(string); ok {
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				out[k] = bytes.Clone(b)
			}
		}
	}
	return out
}
