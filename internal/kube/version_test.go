package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		info version.Info
		want Version
	}{
		{version.Info{Major: "1", Minor: "31", GitVersion: "v1.31.13"}, Version{1, 31, "v1.31.13"}},
		{version.Info{Major: "1", Minor: "33+", GitVersion: "v1.33.5-eks-113cf36"}, Version{1, 33, "v1.33.5-eks-113cf36"}},
		{version.Info{GitVersion: "v1.36.3"}, Version{1, 36, "v1.36.3"}}, // fields empty: from gitVersion
	} {
		got, err := ParseVersion(tc.info)
		if err != nil || got != tc.want {
			t.Errorf("ParseVersion(%+v) = %+v, %v; want %+v", tc.info, got, err, tc.want)
		}
	}
	if _, err := ParseVersion(version.Info{Major: "x", GitVersion: "unknown"}); err == nil {
		t.Error("a /version naming no release: no error")
	}
}

func TestVersionBefore(t *testing.T) {
	for _, tc := range []struct {
		v, o Version
		want bool
	}{
		{Version{Major: 1, Minor: 30}, OldestTested, true},
		{Version{Major: 1, Minor: 31, Git: "v1.31.0"}, OldestTested, false},
		{Version{Major: 1, Minor: 36}, OldestTested, false},
		{Version{Major: 2, Minor: 0}, OldestTested, false},
		{Version{Major: 0, Minor: 99}, OldestTested, true},
	} {
		if got := tc.v.Before(tc.o); got != tc.want {
			t.Errorf("%s.Before(%s) = %v, want %v", tc.v, tc.o, got, tc.want)
		}
	}
}

// ServerVersion asks once and keeps the answer; a failed request is not kept.
func TestServerVersionAsksOnce(t *testing.T) {
	var asked atomic.Int32
	var fail atomic.Bool
	fail.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		asked.Add(1)
		if fail.Load() {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"major":"1","minor":"31","gitVersion":"v1.31.13"}`))
	}))
	defer srv.Close()
	c, err := NewClients(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.ServerVersion(ctx); err == nil {
		t.Fatal("a server answering 503: no error")
	}
	fail.Store(false)
	for range 3 {
		v, err := c.ServerVersion(ctx)
		if err != nil || v != (Version{1, 31, "v1.31.13"}) {
			t.Fatalf("ServerVersion = %+v, %v", v, err)
		}
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("/version asked %d times, want 2 (the failure, then once)", n)
	}
}

func TestParseRelease(t *testing.T) {
	if v, err := ParseRelease("v1.33.5"); err != nil || v != (Version{1, 33, "v1.33.5"}) {
		t.Errorf("ParseRelease(v1.33.5) = %+v, %v", v, err)
	}
	if _, err := ParseRelease("1.33"); err == nil {
		t.Error("ParseRelease(1.33): no error for a release without its v")
	}
}
