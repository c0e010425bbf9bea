package main_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/localcerts"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The resources of CustomResourceDefinitions and of the two kinds of
// webhook configurations.
var (
	crdGVR                   = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	validatingConfigurations = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	mutatingConfigurations   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
)

// deleteConfigurationsAtEnd deletes the webhook configurations named name,
// of both kinds, when the test ends, so that no webhook of the test's is
// left for other tests' requests to reach.
func deleteConfigurationsAtEnd(t *testing.T, c *testcluster.Cluster, name string) {
	t.Cleanup(func() {
		for _, gvr := range []schema.GroupVersionResource{validatingConfigurations, mutatingConfigurations} {
			_ = c.Dynamic.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
}

// A webhookTest is what a test of the operator's webhooks starts from: a
// harness, and a certificate for 127.0.0.1 with a free port to serve it on
// (servingSetup).
type webhookTest struct {
	*harness
	ca          *localcerts.CA
	certs, port string
}

// newWebhookTest gets a harness and a serving certificate and port.
func newWebhookTest(t *testing.T) *webhookTest {
	t.Helper()
	w := &webhookTest{harness: newHarness(t)}
	w.ca, w.certs, w.port = servingSetup(t)
	return w
}

// webhookFlags are the flags of an operator that serves its webhooks on
// 127.0.0.1:port with the certificate in certs (servingSetup's), registered
// by URL with its CA, under the configuration name configName.
func webhookFlags(certs, port, configName string) []string {
	return []string{"--webhook-listen-address", "127.0.0.1:" + port, "--webhook-url", "https://127.0.0.1:" + port,
		"--webhook-cert", filepath.Join(certs, "tls.crt"), "--webhook-key", filepath.Join(certs, "tls.key"),
		"--webhook-ca", filepath.Join(certs, "ca.crt"), "--webhook-configuration-name", configName}
}

// startWebhooks starts an operator on the harness's hooks folder that
// serves its webhooks under configName (webhookFlags), with the flags extra
// besides.
func (w *webhookTest) startWebhooks(t *testing.T, configName string, extra ...string) *observed {
	t.Helper()
	return w.start(t, append(webhookFlags(w.certs, w.port, configName), extra...)...)
}

// labelledConfigMap is the manifest of the ConfigMap name of ns, labelled
// admission-test=yes (what the admission tests' webhooks select), with
// data.value.
func labelledConfigMap(ns, name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: {admission-test: \"yes\"}}\ndata: {value: %s}\n", name, ns, value)
}

// waitDenied applies manifest until the API server refuses it with a
// message that holds want (a new webhook configuration reaches the API
// server within a moment), failing t after a minute; it returns kubectl's
// output.
func (w *webhookTest) waitDenied(t *testing.T, o *observed, manifest, want string) string {
	t.Helper()
	var out string
	waitUntil(t, "a denial saying "+want, func() bool {
		var err error
		out, err = kubectlApply(w.c.Kubeconfig, manifest)
		return err != nil && strings.Contains(out, want)
	}, func() string { return out + "\n" + o.logs.String() })
	return out
}

// installCRD applies the namespaced CRD plural.group of kind, with the
// versions given (the first stored), each keeping any spec, and deletes it
// when the test ends. It returns the CRD's name.
func (w *webhookTest) installCRD(t *testing.T, group, plural, kind string, versions ...string) string {
	t.Helper()
	name := plural + "." + group
	t.Cleanup(func() { _ = w.c.Dynamic.Resource(crdGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	var list strings.Builder
	for i, v := range versions {
		fmt.Fprintf(&list, `
  - name: %s
    served: true
    storage: %t
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}`, v, i == 0)
	}
	out, err := kubectlApply(w.c.Kubeconfig, fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %s}
spec:
  group: %s
  scope: Namespaced
  names: {plural: %s, singular: %s, kind: %s}
  versions:%s
`, name, group, plural, strings.ToLower(kind), kind, list.String()))
	must(t, errWith(err, out))
	return name
}
