package server

import (
	"slices"
	"testing"

	"github.com/hook-operator/hook-operator/internal/webhook"
)

// The secure metrics port offers the webhook port's TLS 1.2 suites, no
// more: the list is written twice (see cipherSuites), and held the same
// here.
func TestCipherSuitesAreTheWebhookPorts(t *testing.T) {
	if !slices.Equal(cipherSuites, webhook.CipherSuites) {
		t.Errorf("metrics suites %v, webhook suites %v: keep them the same", cipherSuites, webhook.CipherSuites)
	}
}
