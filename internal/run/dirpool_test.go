package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// reuseHook reports its run dir, what its output files held at its start
// and its binding contexts in KUBERNETES_PATCH_PATH, writes every other
// output file, and then runs more, a line of bash.
func reuseHook(t *testing.T, more string) Request {
	t.Helper()
	h := bashHook(t, `
dir=$(dirname "$BINDING_CONTEXT_PATH")
sizes=$(stat -c %s "$KUBERNETES_PATCH_PATH" "$METRICS_PATH" "$VALIDATING_RESPONSE_PATH" "$CONVERSION_RESPONSE_PATH" | tr '\n' ' ')
entries=$(ls -A "$dir" | tr '\n' ' ')
printf 'dir=%s\nsizes=%s\nentries=%s\nctx=%s\n' "$dir" "$sizes" "$entries" "$(cat "$BINDING_CONTEXT_PATH")" > "$KUBERNETES_PATCH_PATH"
echo '{"name":"m","action":"set","value":1}' > "$METRICS_PATH"
echo '{"allowed":true}' > "$VALIDATING_RESPONSE_PATH"
echo '{"convertedObjects":[]}' > "$CONVERSION_RESPONSE_PATH"
`+more+"\n")
	return Request{Hook: h}
}

func runReport(t *testing.T, r *Runner, req Request, contexts string) map[string]string {
	t.Helper()
	req.Contexts = []byte(contexts)
	res, err := r.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	report := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Operations)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		report[k] = v
	}
	return report
}

func TestReusedDirIsLikeANewOne(t *testing.T) {
	r, _ := testRunner(t)
	r.ReuseDirs = true
	req := reuseHook(t, "")
	first := runReport(t, r, req, `[{"binding":"a"}]`)
	// Between runs, the kept dir holds no binding contexts (they may hold
	// a Secret's data) and only empty output files.
	dir := first["dir"]
	if _, err := os.Stat(filepath.Join(dir, "binding-context.json")); !os.IsNotExist(err) {
		t.Errorf("the kept dir still holds the binding contexts: %v", err)
	}
	for _, name := range []string{"kubernetes-patch", "metrics", "validating-response", "conversion-response"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Size() != 0 || st.Mode().Perm() != 0o600 {
			t.Errorf("%s between runs: %v, %v", name, st, err)
		}
	}
	second := runReport(t, r, req, `[{"binding":"b"}]`)
	if second["dir"] != dir {
		t.Errorf("the second run had dir %s, want the first's %s", second["dir"], dir)
	}
	want := "0 0 0 0 "
	for i, rep := range []map[string]string{first, second} {
		if rep["sizes"] != want {
			t.Errorf("run %d: output files at the start were %q bytes, want empty", i+1, rep["sizes"])
		}
		if rep["entries"] != "binding-context.json conversion-response kubernetes-patch metrics validating-response " {
			t.Errorf("run %d: the dir held %q", i+1, rep["entries"])
		}
	}
	if second["ctx"] != `[{"binding":"b"}]` {
		t.Errorf("the second run read contexts %s", second["ctx"])
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	assertEmptyDir(t, r.TmpDir)
	// After Close, a run removes its dir.
	runReport(t, r, req, `[]`)
	assertEmptyDir(t, r.TmpDir)
}

// A dir the hook changed is removed and never given to a later run (a dir
// that a process of the run may still write to: kill_linux_test.go).
func TestDirNotReusedAfterChanges(t *testing.T) {
	for name, more := range map[string]string{
		"extra file":       `touch "$dir/state"`,
		"extra dir":        `mkdir "$dir/sub"`,
		"output removed":   `rm "$METRICS_PATH"`,
		"output replaced":  `rm "$METRICS_PATH" && mkfifo "$METRICS_PATH"`,
		"output symlinked": `rm "$METRICS_PATH" && ln -s /dev/null "$METRICS_PATH"`,
		"mode changed":     `chmod 644 "$CONVERSION_RESPONSE_PATH"`,
	} {
		t.Run(name, func(t *testing.T) {
			r, _ := testRunner(t)
			r.ReuseDirs = true
			defer r.Close()
			req := reuseHook(t, more)
			first := runReport(t, r, req, `[]`)
			if _, err := os.Stat(first["dir"]); !os.IsNotExist(err) {
				t.Errorf("the changed dir %s was kept: %v", first["dir"], err)
			}
			assertEmptyDir(t, r.TmpDir)
			second := runReport(t, r, req, `[]`)
			if second["dir"] == first["dir"] {
				t.Errorf("the second run got the first's dir")
			}
			if second["sizes"] != "0 0 0 0 " || strings.Contains(second["entries"], "state") || strings.Contains(second["entries"], "sub") {
				t.Errorf("the second run saw %q, %q", second["sizes"], second["entries"])
			}
		})
	}
}

func TestReusedDirsAreOnePerRunningRun(t *testing.T) {
	r, _ := testRunner(t)
	r.ReuseDirs = true
	req := reuseHook(t, "sleep 0.2")
	const n = 6
	for round := range 2 {
		dirs := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { dirs[i] = runReport(t, r, req, `[]`)["dir"] })
		}
		wg.Wait()
		seen := map[string]bool{}
		for _, d := range dirs {
			if seen[d] {
				t.Errorf("round %d: two runs at once had dir %s", round, d)
			}
			seen[d] = true
		}
		if kept, _ := runDirs(r.TmpDir), error(nil); len(kept) != n {
			t.Errorf("round %d: %d dirs kept, want %d", round, len(kept), n)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	assertEmptyDir(t, r.TmpDir)
}
