package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/localcluster"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// On an API server without streaming lists (the WatchList gate off, as
// Kubernetes 1.31 and 1.33 ship), the informers list and then watch: the
// hooks see every object in their Synchronization and every change after
// it. The refusal is one log line naming the feature and the server's
// version, not a failed watch; an informer started after it (a hook added
// by a reload) does not ask again. start logs the server's version.
func TestIntegrationWithoutStreamingLists(t *testing.T) {
	t.Parallel()
	c := testcluster.OwnedWithGates(t, "hook-operator-nowatchlist", "WatchList=false").Cluster
	ns := c.Namespace(t)
	create := func(name, app string) {
		t.Helper()
		createConfigMap(t, c, ns, name, map[string]string{"app": app}, nil)
	}
	for _, n := range []string{"a", "b", "c"} {
		create(n, "x")
	}
	create("e", "y")

	records, dir := t.TempDir(), t.TempDir()
	hookFor := func(name, app string) string {
		return bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+ns+`"]}},"labelSelector":{"matchLabels":{"app":"`+app+`"}},"jqFilter":".metadata.name"}]}`, `set -euo pipefail
jq -r '.[] | if .type == "Synchronization" then "S " + ([.objects[].filterResult] | sort | join(",")) elif .type == "Event" then "E " + .filterResult else empty end' "$BINDING_CONTEXT_PATH" >>`+filepath.Join(records, name)+`
`)
	}
	saw := func(hook, line string) func() bool {
		return func() bool {
			data, _ := os.ReadFile(filepath.Join(records, hook))
			return strings.Contains("\n"+string(data), "\n"+line+"\n")
		}
	}
	writeHook(t, dir, "x.sh", hookFor("x", "x"))
	o := startOperator(t, dir, operatorOpts{kubeconfig: c.Kubeconfig})
	o.waitFor(t, "the Synchronization of a, b and c", saw("x", "S a,b,c"))
	create("d", "x")
	o.waitFor(t, "the event of d", saw("x", "E d"))
	refused := o.metric(t, `hook_operator_kube_requests_total{code="422",method="GET"}`)
	if refused < 1 {
		t.Errorf("no streaming list was refused (kube_requests_total 422: %v): is the WatchList gate off?", refused)
	}

	writeHook(t, dir, "y.sh", hookFor("y", "y")) // a reload: an informer started after the refusal
	o.waitFor(t, "the added hook's Synchronization of e", saw("y", "S e"))
	create("f", "y")
	o.waitFor(t, "the added hook's event of f", saw("y", "E f"))
	if again := o.metric(t, `hook_operator_kube_requests_total{code="422",method="GET"}`); again != refused {
		t.Errorf("requests refused with 422: %v before the reload, %v after; an informer started after the refusal asked for a streaming list again", refused, again)
	}

	logs := o.logs.String()
	if n := strings.Count(logs, "does not serve streaming lists"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, `"feature":"WatchList"`) || !regexp.MustCompile(`"serverVersion":"v1\.[0-9]+`).MatchString(logs) {
		t.Errorf("the refusal's line names no feature or server version:\n%s", logs)
	}
	if strings.Contains(logs, "watch failed") {
		t.Errorf("a refused streaming list was reported as a failed watch:\n%s", logs)
	}
	_, body := o.get(t, "/metrics")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "hook_operator_watch_errors_total{") && !strings.HasSuffix(line, " 0") {
			t.Errorf("a refused streaming list counted as a watch error: %s", line)
		}
	}
	root, err := testcluster.RepoRoot()
	must(t, err)
	want, err := localcluster.KubeVersion(root)
	must(t, err)
	if !strings.Contains(logs, `"msg":"connected to the cluster"`) || !strings.Contains(logs, `"serverVersion":"`+want+`"`) {
		t.Errorf("start did not log the API server's version, %s:\n%s", want, logs)
	}
}
