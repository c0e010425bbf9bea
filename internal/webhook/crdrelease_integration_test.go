package webhook

import (
	"context"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/metadata"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The conversions an operator registered and no binding names any more
// are found from the CRDs' metadata, read a page at a time (here a CRD a
// page, so that the pages go on past every CRD of this test), and given
// back; the one still named keeps its webhook. The CRDs are the test's
// own, and have one version, so the API server never calls the webhook.
func TestIntegrationConversionsReleasedPageByPage(t *testing.T) {
	c := testcluster.Get(t)
	meta, err := metadata.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	old := crdPage
	crdPage = 1
	t.Cleanup(func() { crdPage = old })
	var crds []string
	for _, kind := range []string{"Kept", "Dropped", "Gone"} {
		gvr := c.InstallCRD(t, testcluster.CRD{Kind: kind})
		crds = append(crds, gvr.GroupResource().String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := Registration{Name: "release-" + rand.String(6), URL: "https://127.0.0.1:9681"}
	log, _ := logtest.NewNullLogger()
	if err := SyncConversions(ctx, c.Dynamic, meta, r, crds, log); err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if got := strategy(t, c, crd); got != "Webhook" {
			t.Fatalf("CRD %s: conversion strategy %q after the registration; want Webhook", crd, got)
		}
	}
	if err := SyncConversions(ctx, c.Dynamic, meta, r, crds[:1], log); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"Webhook", "None", "None"} {
		if got := strategy(t, c, crds[i]); got != want {
			t.Errorf("CRD %s: conversion strategy %q; want %s", crds[i], got, want)
		}
	}
}

func strategy(t *testing.T, c *testcluster.Cluster, crd string) string {
	t.Helper()
	got, err := c.Dynamic.Resource(crdResource).Get(context.Background(), crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := unstructured.NestedString(got.Object, "spec", "conversion", "strategy")
	return s
}
