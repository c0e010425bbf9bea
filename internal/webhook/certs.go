package webhook

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// CertReloader serves a certificate and key read from files, and reads them
// again when they change on disk, so that a rotated certificate (by
// cert-manager, or a Secret volume's atomic swap) is served without a
// restart. A pair that cannot be loaded leaves the last good one in place.
type CertReloader struct {
	certFile, keyFile string
	log               logrus.FieldLogger
	// every is the least time between two looks at the files.
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   fileStamp
	checked time.Time
}

// fileStamp is what tells a changed file: its size and modification time,
// of both files.
type fileStamp struct {
	certSize, keySize int64
	certMod, keyMod   time.Time
}

// NewCertReloader loads the pair and returns a reloader for it; an error
// names the file that could not be used.
func NewCertReloader(certFile, keyFile string, log logrus.FieldLogger) (*CertReloader, error) {
	r := &CertReloader{certFile: certFile, keyFile: keyFile, log: log, every: time.Second, now: time.Now}
	stamp, err := r.stampFiles()
	if err != nil {
		return nil, err
	}
	cert, err := r.load()
	if err != nil {
		return nil, err
	}
	r.cert, r.stamp, r.checked = cert, stamp, r.now()
	return r, nil
}

// GetCertificate is tls.Config's hook: the current pair, read again first
// when the files changed since the last look (at most once per second).
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= r.every {
		r.checked = now
		r.reloadLocked()
	}
	return r.cert, nil
}

// reloadLocked reads the pair again if either file changed.
func (r *CertReloader) reloadLocked() {
	stamp, err := r.stampFiles()
	if err != nil {
		r.log.WithError(err).Error("webhook certificate: keeping the one in use")
		return
	}
	if stamp == r.stamp {
		return
	}
	cert, err := r.load()
	if err != nil {
		// A rotation writes the two files one after the other: the next
		// look, a second later, sees both.
		r.log.WithError(err).Warn("webhook certificate changed on disk but cannot be loaded yet; keeping the one in use")
		return
	}
	r.cert, r.stamp = cert, stamp
	r.log.WithField("notAfter", cert.Leaf.NotAfter.UTC().Format(time.RFC3339)).Info("webhook certificate reloaded")
}

func (r *CertReloader) stampFiles() (fileStamp, error) {
	c, err := os.Stat(r.certFile)
	if err != nil {
		return fileStamp{}, fmt.Errorf("certificate file: %w", err)
	}
	k, err := os.Stat(r.keyFile)
	if err != nil {
		return fileStamp{}, fmt.Errorf("key file: %w", err)
	}
	return fileStamp{certSize: c.Size(), keySize: k.Size(), certMod: c.ModTime(), keyMod: k.ModTime()}, nil
}

func (r *CertReloader) load() (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return nil, fmt.Errorf("certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	return &cert, nil
}
