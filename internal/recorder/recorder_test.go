package recorder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// hookFailed is the reason of the tests' Events.
const hookFailed = "HookFailed"

var (
	cmRef = ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm", UID: "uid-1"}
	nsRef = ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "team-a", UID: "uid-2"}
)

// recorderEnv is a recorder writing to a fake API server.
type recorderEnv struct {
	client *dynamicfake.FakeDynamicClient
	rec    *Recorder
	logs   *testoperator.Buffer

	mu      sync.Mutex
	results map[string]int // what the recorder counted: sent, limited, dropped
}

// counted returns the recorder's counts as "sent=n limited=n dropped=n".
func (e *recorderEnv) counted() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprintf("sent=%d limited=%d dropped=%d", e.results[eventSent], e.results[eventLimited], e.results[eventDropped])
}

func newRecorderEnv(t *testing.T) *recorderEnv {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	logs := &testoperator.Buffer{}
	log := logrus.New()
	log.SetOutput(logs)
	log.SetLevel(logrus.DebugLevel)
	e := &recorderEnv{client: client, logs: logs, results: map[string]int{}}
	e.rec = New(client, log, func(result string) {
		e.mu.Lock()
		e.results[result]++
		e.mu.Unlock()
	})
	e.rec.retryDelay = time.Millisecond
	t.Cleanup(e.rec.Stop)
	return e
}

// actions returns the requests to the fake API server so far, but the
// test's own reads.
func (e *recorderEnv) actions() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range e.client.Actions() {
		if a.GetVerb() != "get" {
			out = append(out, a)
		}
	}
	return out
}

// writes returns the verb and namespace of each of actions.
func (e *recorderEnv) writes() []string {
	var out []string
	for _, a := range e.actions() {
		out = append(out, a.GetVerb()+" "+a.GetNamespace())
	}
	return out
}

func (e *recorderEnv) waitForWrites(t *testing.T, n int) {
	t.Helper()
	poll.UntilShowing(t, 10*time.Second, fmt.Sprintf("%d writes", n), func() bool { return len(e.actions()) >= n }, func() string {
		return fmt.Sprintf("%d writes: %v\n%s", len(e.actions()), e.writes(), e.logs.String())
	})
}

func (e *recorderEnv) event(t *testing.T, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	ev, err := e.client.Resource(eventsGVR).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func createdName(t *testing.T, a k8stesting.Action) string {
	t.Helper()
	c, ok := a.(k8stesting.CreateAction)
	if !ok {
		t.Fatalf("%s %s is not a create", a.GetVerb(), a.GetResource())
	}
	return c.GetObject().(*unstructured.Unstructured).GetName()
}

func TestEventRecorderCreatesThenPatches(t *testing.T) {
	e := newRecorderEnv(t)
	e.rec.Record(cmRef, hookFailed, "boom")
	e.rec.Record(cmRef, hookFailed, "boom")
	e.rec.Record(nsRef, hookFailed, "boom")
	e.rec.Stop() // writes what is queued
	if got, want := strings.Join(e.writes(), ", "), "create ns, patch ns, create default"; got != want {
		t.Fatalf("writes: %s; want %s", got, want)
	}

	name := createdName(t, e.actions()[0])
	if !strings.HasPrefix(name, "cm.") {
		t.Errorf("Event name %q; want the object's name and a time, as client-go names them", name)
	}
	ev := e.event(t, "ns", name)
	for _, f := range []struct {
		path []string
		want any
	}{
		{[]string{"type"}, "Warning"},
		{[]string{"reason"}, hookFailed},
		{[]string{"message"}, "boom"},
		{[]string{"source", "component"}, "hook-operator"},
		{[]string{"reportingComponent"}, "hook-operator"},
		{[]string{"involvedObject", "apiVersion"}, "v1"},
		{[]string{"involvedObject", "kind"}, "ConfigMap"},
		{[]string{"involvedObject", "namespace"}, "ns"},
		{[]string{"involvedObject", "name"}, "cm"},
		{[]string{"involvedObject", "uid"}, "uid-1"},
		{[]string{"count"}, int64(2)},
	} {
		got, _, _ := unstructured.NestedFieldNoCopy(ev.Object, f.path...)
		if fmt.Sprint(got) != fmt.Sprint(f.want) {
			t.Errorf("%s = %v, want %v", strings.Join(f.path, "."), got, f.want)
		}
	}
	first, _, _ := unstructured.NestedString(ev.Object, "firstTimestamp")
	last, _, _ := unstructured.NestedString(ev.Object, "lastTimestamp")
	if _, err := time.Parse(time.RFC3339, first); err != nil || last < first {
		t.Errorf("firstTimestamp %q, lastTimestamp %q", first, last)
	}

	// The cluster-scoped object's Event is in "default", about it.
	nsEvent := e.event(t, "default", createdName(t, e.actions()[2]))
	if kind, _, _ := unstructured.NestedString(nsEvent.Object, "involvedObject", "kind"); kind != "Namespace" {
		t.Errorf("Event in default is about a %s", kind)
	}
	if _, found, _ := unstructured.NestedString(nsEvent.Object, "involvedObject", "namespace"); found {
		t.Error("a cluster-scoped object's reference has a namespace")
	}

	// Records after stop are dropped without blocking or panicking.
	e.rec.Record(cmRef, hookFailed, "after stop")
	if n := len(e.actions()); n != 3 {
		t.Errorf("%d writes after stop; want 3", n)
	}
	if got, want := e.counted(), "sent=3 limited=0 dropped=1"; got != want {
		t.Errorf("counted %s; want %s", got, want)
	}
}

func TestEventRecorderLimitsPerObject(t *testing.T) {
	e := newRecorderEnv(t)
	for i := range eventBurst + 2 {
		e.rec.Record(cmRef, hookFailed, fmt.Sprint("failure ", i))
	}
	e.rec.Record(nsRef, hookFailed, "another object has its own limit")
	e.rec.Stop()
	if n := len(e.actions()); n != eventBurst+1 {
		t.Errorf("%d writes; want %d: the object's burst, and one for the other object", n, eventBurst+1)
	}
	if got, want := e.counted(), fmt.Sprintf("sent=%d limited=2 dropped=0", eventBurst+1); got != want {
		t.Errorf("counted %s; want %s", got, want)
	}
}

func TestEventRecorderRecreatesExpiredEvent(t *testing.T) {
	e := newRecorderEnv(t)
	e.rec.Record(cmRef, hookFailed, "boom")
	e.waitForWrites(t, 1)
	name := createdName(t, e.actions()[0])
	if err := e.client.Resource(eventsGVR).Namespace("ns").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.rec.Record(cmRef, hookFailed, "boom")
	e.rec.Stop()
	if got, want := strings.Join(e.writes(), ", "), "create ns, delete ns, patch ns, create ns"; got != want {
		t.Fatalf("writes: %s; want %s", got, want)
	}
	again := e.event(t, "ns", createdName(t, e.actions()[3]))
	if count, _, _ := unstructured.NestedInt64(again.Object, "count"); count != 2 {
		t.Errorf("the Event created again has count %d; want 2, the count so far", count)
	}
}

func TestEventRecorderWriteFailures(t *testing.T) {
	e := newRecorderEnv(t)
	var creates atomic.Int32
	e.client.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch creates.Add(1) {
		case 1: // the API server cannot be reached: tried again
			return true, nil, errors.New("dial tcp: connection refused")
		case 3: // the API server rejects it: dropped
			return true, nil, apierrors.NewForbidden(eventsGVR.GroupResource(), "", errors.New("no RBAC"))
		}
		return false, nil, nil
	})
	e.rec.Record(cmRef, hookFailed, "first")
	e.waitForWrites(t, 2)
	e.rec.Record(cmRef, hookFailed, "second")
	e.rec.Stop()
	if got := creates.Load(); got != 3 {
		t.Errorf("%d creates; want 3: one retried, one rejected and not retried", got)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "cannot write the Event") || !strings.Contains(logs, "no RBAC") {
		t.Errorf("the rejection is not logged:\n%s", logs)
	}
	if got, want := e.counted(), "sent=1 limited=0 dropped=1"; got != want {
		t.Errorf("counted %s; want %s", got, want)
	}
}

func TestEventRecorderNeverBlocks(t *testing.T) {
	e := newRecorderEnv(t)
	release := make(chan struct{})
	e.client.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-release // a slow API server
		return false, nil, nil
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range maxQueuedEvents + 10 {
			e.rec.Record(cmRef, hookFailed, fmt.Sprint(i))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("record blocked while the API server was slow")
	}
	close(release)
	if !strings.Contains(e.logs.String(), "Event dropped") {
		t.Error("dropping Events from a full queue is not logged")
	}
}

// An Event's message shows a caller's or a hook's text escaped and cut:
// no terminal control reaches `kubectl describe`, and a 600 KB value
// makes a 1 KB message.
func TestMessageEscapedAndCut(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"conversion to v2 failed", "conversion to v2 failed"},
		{"to \x1b[2J\x1b]0;title\x07 \u202e\r\nforged", `to \x1b[2J\x1b]0;title\a \u202e\r\nforged`},
		{"ünïcode stays", "ünïcode stays"},
	} {
		if got := Message(tc.in); got != tc.want {
			t.Errorf("Message(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := Message(strings.Repeat("é", 600<<10))
	if len(long) > MaxMessage || !strings.HasSuffix(long, "…") || !utf8.ValidString(long) {
		t.Errorf("a 1.2 MB message became %d bytes (valid UTF-8: %v)", len(long), utf8.ValidString(long))
	}
	escaped := Message(strings.Repeat("\x1b", 2000))
	if len(escaped) > MaxMessage || strings.ContainsRune(escaped, 0x1b) {
		t.Errorf("2000 ESCs became %d bytes", len(escaped))
	}
}
