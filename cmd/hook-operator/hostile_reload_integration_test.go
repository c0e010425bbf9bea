package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// lines counts the lines of records/name that start with prefix.
func lines(records, name, prefix string) int {
	data, _ := os.ReadFile(filepath.Join(records, name))
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// retriesOf counts the log lines of failed runs of hook to be retried.
func retriesOf(logs, hook string) int {
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"msg":"hook failed; retrying"`) && strings.Contains(l, `"hook":"`+hook+`"`) {
			n++
		}
	}
	return n
}

// A hook whose onStartup run fails at every try holds start-up, and so
// readiness and the reloads, which wait for start-up. While it does,
// /readyz, the log and `debug queues` name it, with its attempts and the
// command that drops it; a reload that removes it (its file deleted) ends
// its retries at once rather than waiting behind it, and start-up, and
// readiness, complete. Before: retried for 60+ s after its deletion ("no
// such file or directory"), the reload blocked, /readyz named nothing.
func TestIntegrationHostileReloadFreesAFailingStartupHook(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	records := t.TempDir()
	h.hook(t, "fails.sh", bashHook(`{"configVersion":"v1","onStartup":1}`,
		"echo run >>"+filepath.Join(records, "fails")+"\necho 'cannot start' >&2\nexit 1\n"))
	h.hook(t, "ok.sh", bashHook(`{"configVersion":"v1","kubernetes":[`+strings.ReplaceAll(cmBinding("cms", "ok"), "NS", h.ns)+`]}`,
		`jq -r '.[] | .type' "$BINDING_CONTEXT_PATH" >>`+filepath.Join(records, "ok")+"\n"))
	o := h.start(t)
	o.waitFor(t, "fails.sh's third failed run", func() bool { return lines(records, "fails", "run") >= 3 })

	// What holds start-up is named, in /readyz, debug and the log.
	drop := "hook-operator debug drop main fails.sh"
	o.waitFor(t, "/readyz to name the failing onStartup run", func() bool {
		code, body := o.get(t, "/readyz")
		return code == 503 && strings.Contains(body, "fails.sh's onStartup run (queue main), which failed") && strings.Contains(body, "`"+drop+"` drops it")
	})
	_, body := o.get(t, "/readyz")
	t.Logf("/readyz while fails.sh fails:\n%s", body)
	// Between its retries the failed run holds the queue; while a retry
	// runs, debug shows it running.
	var queues string
	waitUntil(t, "debug queues to name what holds queue main and how to free it", func() bool {
		queues = o.debug(t, "queues")
		return strings.Contains(queues, "fails.sh's failed run") && strings.Contains(queues, "holds queue main") && strings.Contains(queues, drop)
	}, func() string { return queues })
	if logs := o.logs.String(); !strings.Contains(logs, `"toDrop":"`+drop+`"`) {
		t.Errorf("the log of the failed runs does not say toDrop=%q", drop)
	}
	if lines(records, "ok", "Synchronization") != 0 {
		t.Fatal("ok.sh's Synchronization ran while start-up waited for fails.sh's onStartup")
	}

	// The hook is deleted: its retries end, start-up and the reload go on.
	must(t, os.Remove(filepath.Join(h.hooks, "fails.sh")))
	removed := time.Now()
	o.waitReady(t)
	readyAfter := time.Since(removed)
	o.waitFor(t, "the reload that removed fails.sh", func() bool {
		return o.metric(t, `hook_operator_hooks_reload_total{result="applied"}`) >= 1
	})
	o.waitFor(t, "ok.sh's Synchronization", func() bool { return lines(records, "ok", "Synchronization") == 1 })
	before := retriesOf(o.logs.String(), "fails.sh")
	time.Sleep(3 * time.Second) // retries are 0.5-1 s apart: three would show
	if after := retriesOf(o.logs.String(), "fails.sh"); after != before {
		t.Errorf("fails.sh was retried %d more times after the reload removed it", after-before)
	}
	t.Logf("ready %s after fails.sh was deleted", readyAfter.Round(10*time.Millisecond))
	if readyAfter > 15*time.Second {
		t.Errorf("ready %s after fails.sh was deleted; want within a few seconds (a reload is half a second after the change)", readyAfter)
	}
}

// greetingHook is a hook with one binding to kind (of apiVersion) in ns
// that records "<type> <names>" for each context into records/name.
func greetingHook(ns, records, name, apiVersion, kind string) string {
	return bashHook(`{"configVersion":"v1","kubernetes":[{"name":"greetings","apiVersion":"`+apiVersion+`","kind":"`+kind+`","namespace":{"nameSelector":{"matchNames":["`+ns+`"]}}}]}`,
		`jq -r '.[] | "\(.type) \([.objects[]?.object.metadata.name, .object.metadata.name // empty] | join(","))"' "$BINDING_CONTEXT_PATH" >>`+filepath.Join(records, name)+"\n")
}

// A kind missing from a group/version the cluster serves ("Greting" where
// Greeting is served) is most likely a typo: the log says so with a
// did-you-mean, and /readyz names the binding. A kind whose group/version
// is not served at all (a CRD not installed yet) waits as before, and
// readiness does not name it. Before: "kind is not served yet; waiting for
// it" alone, /readyz 200.
func TestIntegrationHostileTypoKindDidYouMean(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	records := t.TempDir()
	gvr := h.c.InstallCRD(t, testcluster.CRD{Kind: "Greeting"})
	h.hook(t, "typo.sh", greetingHook(h.ns, records, "typo", gvr.Group+"/v1", "Greting"))
	h.hook(t, "later.sh", greetingHook(h.ns, records, "later", testcluster.Unique()+"/v1", "Later"))
	o := h.start(t)
	o.waitLog(t, `did you mean \"Greeting\"?`)
	o.waitFor(t, "/readyz to name the misspelled kind", func() bool {
		code, body := o.get(t, "/readyz")
		return code == 503 && strings.Contains(body, "binding typo.sh/greetings waits for a kind its group/version does not serve") &&
			strings.Contains(body, `did you mean "Greeting"?`)
	})
	code, body := o.get(t, "/readyz")
	t.Logf("/readyz (%d):\n%s", code, body)
	if strings.Contains(body, "later.sh") {
		t.Errorf("/readyz names later.sh, whose group/version is not served (a CRD to come):\n%s", body)
	}
	if !strings.Contains(o.logs.String(), "kind is not served yet; waiting for it") {
		t.Error("later.sh's binding does not log that it waits for its kind")
	}
}

// A hot reload that misspells the kind of a working binding is refused:
// the error, with its did-you-mean, goes where an invalid reload's go
// (the log and hooks_reload_total{result="invalid"}), and the binding
// loaded before keeps delivering events. Before: the reload was applied,
// and the working binding was replaced by one waiting forever.
func TestIntegrationHostileReloadTypoKindKeepsTheBinding(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	records := t.TempDir()
	ctx := context.Background()
	gvr := h.c.InstallCRD(t, testcluster.CRD{Kind: "Greeting"})
	apiVersion := gvr.Group + "/v1"
	h.hook(t, "greet.sh", greetingHook(h.ns, records, "greet", apiVersion, "Greeting"))
	o := h.start(t)
	o.waitReady(t)
	o.waitFor(t, "greet.sh's Synchronization", func() bool { return lines(records, "greet", "Synchronization") == 1 })

	h.hook(t, "greet.sh", greetingHook(h.ns, records, "greet", apiVersion, "Greting"))
	o.waitFor(t, `hooks_reload_total{result="invalid"}`, func() bool {
		return o.metric(t, `hook_operator_hooks_reload_total{result="invalid"}`) >= 1
	})
	if logs := o.logs.String(); !strings.Contains(logs, `did you mean \"Greeting\"?`) || !strings.Contains(logs, "kubernetes[0].kind") {
		t.Errorf("the refused reload's error does not name greet.sh's kubernetes[0].kind with a did-you-mean:\n%s", logs)
	}
	if n := o.metric(t, `hook_operator_hooks_reload_total{result="applied"}`); n > 0 {
		t.Errorf("hooks_reload_total{result=\"applied\"} = %v: the reload with the misspelled kind was applied", n)
	}

	// The binding loaded before still delivers.
	hello := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": "Greeting",
		"metadata": map[string]any{"name": "hello", "namespace": h.ns},
	}}
	_, err := h.c.Dynamic.Resource(gvr).Namespace(h.ns).Create(ctx, hello, metav1.CreateOptions{})
	must(t, err)
	o.waitFor(t, "greet.sh's event for the new Greeting", func() bool { return lines(records, "greet", "Event hello") == 1 })
	if code, body := o.get(t, "/readyz"); code != 200 {
		t.Errorf("/readyz %d after the refused reload:\n%s", code, body)
	}
}
