package transcript_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/memcluster"
	"github.com/hook-operator/hook-operator/internal/transcript"
)

var secretsHook = &hook.Hook{Name: "s.sh", Config: hook.Config{Kubernetes: []hook.KubernetesBinding{
	{Common: hook.Common{Name: "secrets"}, Kind: "Secret"},
}}}

func report() executor.Report {
	return executor.Report{
		Hook: secretsHook, Queue: "main", Bindings: "secrets",
		Contexts: []byte(`[{"binding":"secrets","type":"Event","watchEvent":"Added",
			"object":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"data":{"password":"aHVudGVyMg=="}},
			"filterResult":{"password":"aHVudGVyMg=="}}]`),
		Operations: []byte(`{"operation":"Create","object":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"copy","namespace":"ns"},"stringData":{"password":"hunter2"}}}
{"operation":"Delete","kind":"ConfigMap","namespace":"ns","name":"old","replicas":12345678901234567890}`),
		Err: errors.New("boom"),
	}
}

func TestNewRedactsSecrets(t *testing.T) {
	var out bytes.Buffer
	w, err := transcript.NewWriter(&out, "json")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(transcript.New(report(), nil, transcript.Options{})); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, leaked := range []string{"aHVudGVyMg==", "hunter2"} {
		if strings.Contains(s, leaked) {
			t.Errorf("secret value %q printed: %s", leaked, s)
		}
	}
	for _, want := range []string{`"hook":"s.sh"`, `"password":"[redacted]"`, `"error":"boom"`, `12345678901234567890`, `"name":"old"`} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %s: %s", want, s)
		}
	}
	if strings.Count(s, "\n") != 1 {
		t.Errorf("json output is not one line per run: %q", s)
	}
	out.Reset()
	_ = w.Write(transcript.New(report(), nil, transcript.Options{ShowSecrets: true}))
	if !strings.Contains(out.String(), "hunter2") || !strings.Contains(out.String(), "aHVudGVyMg==") {
		t.Errorf("--show-secrets masked data: %s", out.String())
	}
}

func TestFromMemoryDiffs(t *testing.T) {
	cm := func(v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "ns", "resourceVersion": v},
			"data":     map[string]any{"k": v},
		}}
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	got := transcript.FromMemory([]memcluster.Change{
		{Type: "Added", Resource: gvr, New: cm("1")},
		{Type: "Modified", Resource: gvr, Old: cm("1"), New: cm("2")},
		{Type: "Deleted", Resource: gvr, Old: cm("2"), New: cm("3")},
	}, transcript.Options{})
	if len(got) != 3 || got[0].Action != "Created" || got[1].Action != "Updated" || got[2].Action != "Deleted" {
		t.Fatalf("changes: %+v", got)
	}
	if got[1].Object != "v1/ConfigMap ns/c" || !strings.Contains(got[1].Diff, `-  k: "1"`) || !strings.Contains(got[1].Diff, `+  k: "2"`) {
		t.Errorf("update: %+v", got[1])
	}
	if strings.Contains(got[1].Diff, "resourceVersion") {
		t.Errorf("the diff shows resourceVersion:\n%s", got[1].Diff)
	}
}

func TestYAMLDocuments(t *testing.T) {
	var out bytes.Buffer
	w, _ := transcript.NewWriter(&out, "yaml")
	r := report()
	r.Err = nil
	_ = w.Write(transcript.New(r, nil, transcript.Options{}))
	_ = w.Write(transcript.New(r, nil, transcript.Options{}))
	if strings.Count(out.String(), "---\n") != 2 || !strings.Contains(out.String(), "hook: s.sh") {
		t.Errorf("yaml output:\n%s", out.String())
	}
	if _, err := transcript.NewWriter(&out, "xml"); err == nil {
		t.Error("format xml accepted")
	}
}
