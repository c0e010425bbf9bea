package record

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/cli/kubeflags"
	"github.com/hook-operator/hook-operator/internal/fixture"
	"github.com/hook-operator/hook-operator/internal/redact"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// hooksDir returns a hooks folder with one bash hook printing config.
func hooksDir(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/usr/bin/env bash\nif [[ \"${1:-}\" == \"--config\" ]]; then\ncat <<'EOF'\n" + config + "\nEOF\nfi\nexit 0\n"
	if err := os.WriteFile(filepath.Join(dir, "hook.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// logs is a logger for Run that tells when a message was logged.
type logs struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logs) Levels() []logrus.Level { return logrus.AllLevels }

func (l *logs) Fire(e *logrus.Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, e.Message)
	return nil
}

func (l *logs) waitFor(t *testing.T, msg string, done <-chan error) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		l.mu.Lock()
		for _, m := range l.msgs {
			if strings.Contains(m, msg) {
				l.mu.Unlock()
				return
			}
		}
		l.mu.Unlock()
		select {
		case err := <-done:
			t.Fatalf("record ended before logging %q: %v", msg, err)
		case <-deadline:
			t.Fatalf("record never logged %q", msg)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func newLogger(t *testing.T) (*logrus.Logger, *logs) {
	log := logrus.New()
	log.SetOutput(testWriter{t})
	l := &logs{}
	log.AddHook(l)
	return log, l
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func createConfigMap(t *testing.T, c *testcluster.Cluster, ns, name string, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func readFixture(t *testing.T, path string) *fixture.Fixture {
	t.Helper()
	f, err := fixture.ReadObjects(path)
	if err != nil {
		t.Fatalf("the recording does not read back: %v", err)
	}
	return f
}

func find(objs []*unstructured.Unstructured, kind, ns, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	return nil
}

func TestIntegrationRecordObjects(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	other := c.Namespace(t)
	a := createConfigMap(t, c, ns, "a", map[string]string{"color": "blue"})
	b := createConfigMap(t, c, ns, "b", map[string]string{"size": "L"})
	createConfigMap(t, c, other, "elsewhere", nil)
	if _, err := c.Client.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"password": "hunter2"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hooks := hooksDir(t, fmt.Sprintf(`{"configVersion":"v1","kubernetes":[{"name":"cms","apiVersion":"v1","kind":"ConfigMap",
"namespace":{"nameSelector":{"matchNames":[%q]}},"jqFilter":".data","executeHookOnEvent":["Added"],"finalizer":"example.com/keep"}]}`, ns))
	out := filepath.Join(t.TempDir(), "rec.yaml")
	log, _ := newLogger(t)

	if err := Run(context.Background(), Flags{HooksDir: hooks, Kube: kubeflags.Flags{Kubeconfig: c.Kubeconfig}, Out: out}, nil, log); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	f := readFixture(t, out)
	for _, want := range []*corev1.ConfigMap{a, b} {
		got := find(f.Objects, "ConfigMap", ns, want.Name)
		if got == nil {
			t.Errorf("ConfigMap %s not recorded", want.Name)
			continue
		}
		// The full object, not the jqFilter's result.
		data, _, _ := unstructured.NestedStringMap(got.Object, "data")
		if fmt.Sprint(data) != fmt.Sprint(want.Data) || got.GetResourceVersion() != want.ResourceVersion || got.GetUID() != want.UID {
			t.Errorf("ConfigMap %s recorded as %v", want.Name, got.Object)
		}
		if len(got.GetFinalizers()) != 0 {
			t.Errorf("ConfigMap %s recorded with finalizers %v", want.Name, got.GetFinalizers())
		}
	}
	for _, o := range f.Objects {
		if o.GetKind() != "ConfigMap" || o.GetNamespace() != ns {
			t.Errorf("recorded %s %s/%s, which no binding watches", o.GetKind(), o.GetNamespace(), o.GetName())
		}
	}
	if len(f.Events) != 0 || len(f.Resources) != 0 {
		t.Errorf("events %v, resources %v; want none", f.Events, f.Resources)
	}
	// Nothing was written: same versions, no finalizer added.
	for _, want := range []*corev1.ConfigMap{a, b} {
		now, err := c.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if now.ResourceVersion != want.ResourceVersion || len(now.Finalizers) != 0 {
			t.Errorf("record changed ConfigMap %s: resourceVersion %s -> %s, finalizers %v", want.Name, want.ResourceVersion, now.ResourceVersion, now.Finalizers)
		}
	}
}

func TestIntegrationRecordEvents(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	createConfigMap(t, c, ns, "steady", nil)
	// Two bindings see every change of the ConfigMaps: each is recorded once.
	hooks := hooksDir(t, fmt.Sprintf(`{"configVersion":"v1","kubernetes":[
{"name":"cms","apiVersion":"v1","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":[%q]}},"jqFilter":".metadata.name"},
{"name":"again","kind":"configmaps","namespace":{"nameSelector":{"matchNames":[%q]}},"executeHookOnEvent":[]}]}`, ns, ns))
	out := filepath.Join(t.TempDir(), "rec.yaml")
	log, logged := newLogger(t)
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Flags{HooksDir: hooks, Kube: kubeflags.Flags{Kubeconfig: c.Kubeconfig}, Out: out, Duration: 3 * time.Second}, nil, log)
	}()
	logged.waitFor(t, "recording events", done)

	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(ns)
	created := createConfigMap(t, c, ns, "moving", map[string]string{"v": "1"})
	created.Data["v"] = "2"
	updated, err := cms.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "moving", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	f := readFixture(t, out)
	var got []string
	for _, ev := range f.Events {
		v, _, _ := unstructured.NestedString(ev.Object.Object, "data", "v")
		got = append(got, fmt.Sprintf("%s %s v=%s", ev.Type, ev.Object.GetName(), v))
	}
	want := []string{"Added moving v=1", "Modified moving v=2", "Deleted moving v=2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events\n%v\nwant\n%v", got, want)
	}
	if len(f.Events) == 3 && f.Events[1].Object.GetResourceVersion() != updated.ResourceVersion {
		t.Errorf("Modified at resourceVersion %s, want %s", f.Events[1].Object.GetResourceVersion(), updated.ResourceVersion)
	}
	if find(f.Objects, "ConfigMap", ns, "steady") == nil || find(f.Objects, "ConfigMap", ns, "moving") != nil {
		t.Errorf("objects %v: want steady, and not moving, which came later", f.Objects)
	}
}

func TestIntegrationRecordRedactsSecrets(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	lastApplied := `{"apiVersion":"v1","kind":"Secret","stringData":{"password":"hunter2"}}`
	secret, err := c.Client.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": lastApplied}},
		StringData: map[string]string{"password": "hunter2"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hooks := hooksDir(t, fmt.Sprintf(`{"configVersion":"v1","kubernetes":[{"name":"secrets","apiVersion":"v1","kind":"Secret",
"namespace":{"nameSelector":{"matchNames":[%q]}},"keepFullObjectsInMemory":false,"jqFilter":".data"}]}`, ns))
	for _, show := range []bool{false, true} {
		t.Run(fmt.Sprintf("show-secrets=%v", show), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "rec.yaml")
			log, _ := newLogger(t)
			if err := Run(context.Background(), Flags{HooksDir: hooks, Kube: kubeflags.Flags{Kubeconfig: c.Kubeconfig}, Out: out, ShowSecrets: show}, nil, log); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			got := find(readFixture(t, out).Objects, "Secret", ns, "db")
			if got == nil {
				t.Fatal("Secret not recorded")
			}
			password, _, _ := unstructured.NestedString(got.Object, "data", "password")
			annotation := got.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]
			encoded := base64.StdEncoding.EncodeToString([]byte("hunter2"))
			if show {
				if password != encoded || annotation != lastApplied {
					t.Errorf("--show-secrets: password %q, annotation %q", password, annotation)
				}
				return
			}
			if password != redact.Mask || annotation != redact.Mask {
				t.Errorf("password %q, annotation %q; want %q", password, annotation, redact.Mask)
			}
			if strings.Contains(string(raw), encoded) || strings.Contains(string(raw), "hunter2") {
				t.Errorf("the file holds the secret:\n%s", raw)
			}
		})
	}
	now, err := c.Client.CoreV1().Secrets(ns).Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.ResourceVersion != secret.ResourceVersion {
		t.Errorf("record changed the Secret: resourceVersion %s -> %s", secret.ResourceVersion, now.ResourceVersion)
	}
}

func TestIntegrationRecordCustomKindsAndNamespaces(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	gvr := c.InstallCRD(t, testcluster.CRD{Kind: "Widget", ShortNames: []string{"wdg"}})
	ctx := context.Background()
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"size": int64(3)},
	}}
	if _, err := c.Dynamic.Resource(gvr).Namespace(ns).Create(ctx, widget, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nsObj, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	label := nsObj.Labels["hook-operator.dev/test"]
	hooks := hooksDir(t, fmt.Sprintf(`{"configVersion":"v1","kubernetes":[{"name":"widgets","apiVersion":%q,"kind":"Widget",
"namespace":{"labelSelector":{"matchLabels":{"hook-operator.dev/test":%q}}}}]}`, gvr.GroupVersion().String(), label))
	out := filepath.Join(t.TempDir(), "rec.yaml")
	log, _ := newLogger(t)
	if err := Run(ctx, Flags{HooksDir: hooks, Kube: kubeflags.Flags{Kubeconfig: c.Kubeconfig}, Out: out}, nil, log); err != nil {
		t.Fatal(err)
	}
	f := readFixture(t, out)
	if find(f.Objects, "Widget", ns, "w1") == nil {
		t.Error("the Widget was not recorded")
	}
	crd := find(f.Objects, "CustomResourceDefinition", "", gvr.Resource+"."+gvr.Group)
	if crd == nil {
		t.Error("the Widget's CustomResourceDefinition was not recorded")
	} else if short, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames"); fmt.Sprint(short) != "[wdg]" {
		t.Errorf("CRD short names %v", short)
	}
	if len(f.Resources) != 0 {
		t.Errorf("resources %+v; the CRD declares the kind", f.Resources)
	}
	if n := find(f.Objects, "Namespace", "", ns); n == nil || n.GetLabels()["hook-operator.dev/test"] != label {
		t.Errorf("the Namespace, which the binding selects by label, was not recorded with its labels: %v", n)
	}
}
