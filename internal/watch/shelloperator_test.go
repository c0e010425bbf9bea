package watch

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/jq"
	"github.com/hook-operator/hook-operator/internal/metrics"
)

// Failed lists and watches are sorted into shell-operator's error types.
func TestWatchErrorType(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{apierrors.NewResourceExpired("too old resource version: 1 (2)"), metrics.WatchErrorExpired},
		{apierrors.NewGone("gone"), metrics.WatchErrorExpired},
		{&url.Error{Op: "Get", URL: "https://api/x", Err: io.EOF}, metrics.WatchErrorEOF},
		{fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), metrics.WatchErrorUnexpectedEOF},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("RBAC")), metrics.WatchErrorFail},
		{fmt.Errorf("connection refused"), metrics.WatchErrorFail},
	} {
		if got := watchErrorType(c.err); got != c.want {
			t.Errorf("watchErrorType(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

// listFeed is a feed of fixed entries.
type listFeed struct{ entries []*entry }

func (f *listFeed) get(namespace, name string) *entry { return nil }
func (f *listFeed) list() []*entry                    { return f.entries }

// While shell-operator's families are served, the objects each binding
// holds are served as its kube_snapshot_objects too, with the binding's
// queue; each jqFilter run and each event handled are timed.
func TestShellOperatorWatchFamilies(t *testing.T) {
	m := metrics.New(metrics.DefaultPrefix)
	if err := m.ServeShellOperator("so_"); err != nil {
		t.Fatal(err)
	}
	filter, err := jq.Compile(".data")
	if err != nil {
		t.Fatal(err)
	}
	h := &hook.Hook{Name: "h.sh", Config: hook.Config{Kubernetes: []hook.KubernetesBinding{
		{Common: hook.Common{Name: "cms", Queue: "q"}, Filter: filter},
		{Common: hook.Common{Name: "all", Queue: "main"}},
	}}}
	filtered := newBinding(h, &h.Config.Kubernetes[0], newOutbox(nil), discardLog())
	full := newBinding(h, &h.Config.Kubernetes[1], newOutbox(nil), discardLog())
	filtered.metrics, full.metrics = m, m
	e := newEntry(decodeUnstructured(t, configMapJSON(1)), []*Binding{filtered, full}, true, false)
	filtered.sources = map[string]*source{"": {inf: &listFeed{[]*entry{e, e}}}}
	w := &Watcher{}
	all := []*Binding{filtered, full}
	w.bindings.Store(&all)
	w.informers = map[informerKey]*informer{}
	m.Register(newObjectsCollector(w, m))
	filtered.notify(&listFeed{[]*entry{e}}, "", 0, hook.Added, nil, e) // a source it does not hold: handled, and ignored

	var b strings.Builder
	if err := metrics.WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`so_kube_snapshot_objects{binding="cms",hook="h.sh",queue="q"} 2`,
		`so_kube_snapshot_objects{binding="all",hook="h.sh",queue="main"} 0`,
		`hook_operator_binding_objects{binding="cms",hook="h.sh"} 2`,
		`so_kube_jq_filter_duration_seconds_count{binding="cms",hook="h.sh",queue="q"} 1`,
		`so_kube_jq_filter_duration_seconds_count{binding="all",hook="h.sh",queue="main"} 1`,
		`so_kube_event_duration_seconds_count{binding="cms",hook="h.sh",queue="q"} 1`,
	} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("no line %q in:\n%s", line, b.String())
		}
	}
}
