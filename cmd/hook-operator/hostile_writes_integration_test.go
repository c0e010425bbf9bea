package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A hook that declares writes to ConfigMaps of its own namespace and
// writes a Secret there and a ConfigMap in another namespace, with an
// operator whose credentials allow it all (issue 60: such writes were
// neither warned of nor could be refused):
//   - without --restrict-writes, everything is applied as before; the two
//     operations outside are counted by reason and warned of once each,
//     naming the hook, the operation, its kind and namespace and the
//     declared writes, however many runs write them;
//   - with --restrict-writes, each run fails before anything is applied
//     (the declared ConfigMap is not written either), and is retried, its
//     error naming both operations and the declared writes.
func TestIntegrationHostileRestrictWrites(t *testing.T) {
	t.Run("warned", func(t *testing.T) { restrictWrites(t, false) })
	t.Run("refused", func(t *testing.T) { restrictWrites(t, true) })
}

func restrictWrites(t *testing.T, restrict bool) {
	h := newHarness(t)
	own, other := h.ns, h.c.Namespace(t)
	ctx := context.Background()
	config := fmt.Sprintf(`{"configVersion":"v1","kubernetes":[{"name":"trigger","kind":"ConfigMap",`+
		`"namespace":{"nameSelector":{"matchNames":[%q]}},"nameSelector":{"matchNames":["trigger"]}}],`+
		`"writes":[{"kind":"ConfigMap","verbs":["create"],"namespaces":[%q]}]}`, own, own)
	create := func(kind, ns, name string) string {
		op, err := json.Marshal(map[string]any{"operation": "CreateIfNotExists", "object": map[string]any{
			"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": "dg=="}}})
		must(t, err)
		return string(op)
	}
	h.hook(t, "writer.sh", bashHook(config, fmt.Sprintf("cat >\"$KUBERNETES_PATCH_PATH\" <<'EOF'\n%s\n%s\n%s\nEOF\n",
		create("ConfigMap", own, "declared"), create("Secret", own, "stolen"), create("ConfigMap", other, "planted"))))
	h.configMap(t, "trigger", nil, nil)

	var extra []string
	if restrict {
		extra = append(extra, "--restrict-writes")
	}
	o := h.start(t, extra...)
	exists := func(kind, ns, name string) bool {
		var err error
		if kind == "Secret" {
			_, err = h.c.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		} else {
			_, err = h.c.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	counted := func(reason string) float64 {
		return o.metric(t, `hook_operator_writes_outside_declared_total{hook="writer.sh",reason="`+reason+`"}`)
	}

	if !restrict {
		o.waitFor(t, "the three objects written", func() bool {
			return exists("ConfigMap", own, "declared") && exists("Secret", own, "stolen") && exists("ConfigMap", other, "planted")
		})
		// Three more runs write the same again, one after the other.
		for i := range 3 {
			before := counted("kind")
			patch := fmt.Sprintf(`{"data":{"run":"%d"}}`, i)
			_, err := h.c.Client.CoreV1().ConfigMaps(own).Patch(ctx, "trigger", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			must(t, err)
			o.waitFor(t, "the run of the patch", func() bool { return counted("kind") > before })
		}
		warnings := 0
		for _, line := range strings.Split(o.logs.String(), "\n") {
			if !strings.Contains(line, "outside the hook's declared writes") {
				continue
			}
			warnings++
			var entry map[string]any
			must(t, json.Unmarshal([]byte(line), &entry))
			writes := fmt.Sprintf("ConfigMap (create) in %s", own)
			switch {
			case entry["kind"] == "Secret" && entry["namespace"] == own && entry["operation"] == 1.0 && entry["reason"] == "kind":
			case entry["kind"] == "ConfigMap" && entry["namespace"] == other && entry["operation"] == 2.0 && entry["reason"] == "namespace":
			default:
				t.Errorf("unexpected warning: %s", line)
			}
			if entry["hook"] != "writer.sh" || entry["writes"] != writes || entry["level"] != "warning" {
				t.Errorf("warning without the hook, its writes (%s) or its level: %s", writes, line)
			}
		}
		t.Logf("%v runs, each with 2 operations outside the declared writes: %d warnings, counted kind=%v namespace=%v", counted("kind"), warnings, counted("kind"), counted("namespace"))
		if counted("namespace") != counted("kind") {
			t.Errorf("counted kind=%v, namespace=%v: want one of each per run", counted("kind"), counted("namespace"))
		}
		if warnings != 2 {
			t.Errorf("%d warnings, want 2: once per hook, kind and namespace", warnings)
		}
		return
	}

	// failures are the log lines of the runs that failed, refused.
	failures := func() (lines []string) {
		for _, line := range strings.Split(o.logs.String(), "\n") {
			if strings.Contains(line, `"msg":"hook failed; retrying"`) && strings.Contains(line, "outside its declared writes") {
				lines = append(lines, line)
			}
		}
		return lines
	}
	o.waitFor(t, "two refused runs (the first and a retry)", func() bool { return len(failures()) >= 2 })
	wantAll(t, "the run's error", failures()[0],
		fmt.Sprintf("operation 1 (CreateIfNotExists v1/Secret %s/stolen): needs create on v1 Secret in namespace %s, a kind the hook does not declare", own, own),
		fmt.Sprintf("operation 2 (CreateIfNotExists v1/ConfigMap %s/planted): needs create on v1 ConfigMap in namespace %s, a namespace the hook does not declare", other, other),
		fmt.Sprintf("the hook's writes: ConfigMap (create) in %s", own))
	for _, obj := range [][3]string{{"ConfigMap", own, "declared"}, {"Secret", own, "stolen"}, {"ConfigMap", other, "planted"}} {
		if exists(obj[0], obj[1], obj[2]) {
			t.Errorf("%s %s/%s was written: a refused run applied it", obj[0], obj[1], obj[2])
		}
	}
	if v := counted("kind"); v < 2 {
		t.Errorf("writes_outside_declared_total{reason=kind} is %v, want a count per refused run (at least 2)", v)
	}
	t.Logf("with --restrict-writes: %d refused runs, nothing applied", len(failures()))
}
