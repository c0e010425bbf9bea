package ops

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Requeue operations are checked with the rest of the file, but applying
// the file writes nothing for them.
func TestIntegrationRequeue(t *testing.T) {
	e := newEnv(t)
	file := `
- {operation: Requeue, kind: ConfigMap, namespace: %NS%, name: later, after: 1m}
- {operation: Create, object: {kind: ConfigMap, metadata: {name: now, namespace: %NS%}}}
- {operation: Requeue, name: anything, after: 10s, binding: configmaps}
- {operation: Create, object: {kind: ConfigMap, metadata: {name: now, namespace: %NS%}}}
`
	err := e.applyFor("h.sh", file)
	// The second Create fails; the progress counts only applied operations.
	wantErr(t, err, fmt.Sprintf("operation 3 (Create v1/ConfigMap %s/now): ", e.ns), "already exists", "(the operation before it was applied)")
	if e.get(configMaps, "later") != nil {
		t.Error("a Requeue wrote an object")
	}
	ops := mustParse(t, fmt.Sprintf(`{operation: Requeue, kind: cm, namespace: %s, name: later, after: 90s}`, e.ns))
	if err := e.a.ApplyFor(context.Background(), "h.sh", ops); err != nil {
		t.Errorf("ApplyFor: %v", err)
	}
	if len(ops) != 1 || ops[0].Type != Requeue || ops[0].After != 90*time.Second {
		t.Errorf("parsed Requeue = %v", ops)
	}

	// Check resolves a Requeue's kind, and nothing of an invalid file is
	// applied.
	for _, bad := range []struct{ file, want string }{
		{`{operation: Requeue, kind: NoSuchKind, namespace: %NS%, name: x, after: 1m}`, "operation 1 (Requeue NoSuchKind %NS%/x after 1m0s): kind: NoSuchKind: unknown kind"},
		{`{operation: Requeue, kind: ConfigMap, name: x, after: 1m}`, "operation 1 (Requeue v1/ConfigMap x after 1m0s): namespace: required: ConfigMap is namespaced"},
	} {
		ops := mustParse(t, fmt.Sprintf("{operation: Create, object: {kind: ConfigMap, metadata: {name: first, namespace: %s}}}\n---\n%s", e.ns, replaceNS(bad.file, e.ns)))
		want := replaceNS(bad.want, e.ns)
		wantErr(t, e.a.Check(ops), want)
		wantErr(t, e.a.ApplyFor(context.Background(), "h.sh", ops), want)
		if e.get(configMaps, "first") != nil {
			t.Fatal("applied a file with an invalid Requeue")
		}
	}
}

func replaceNS(s, ns string) string { return strings.ReplaceAll(s, "%NS%", ns) }
