package deploy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// derivedDockerfile is a shell-operator user's Dockerfile, with our image
// as its base: the hooks copied in, and shell-operator's image's own
// entrypoint and command, which a derived Dockerfile may repeat.
const derivedDockerfile = `FROM ` + testImage + `
COPY hooks /hooks
ENTRYPOINT ["/sbin/tini", "--", "/shell-operator"]
CMD ["start"]
`

// curlKubectlHook is a bash hook as shell-operator's users write them, for
// ConfigMaps labelled ping=yes in ns: for each one added, it asks the
// operator's /healthz with curl and creates <name>-ack with /bin/kubectl,
// holding curl's status code, the uid it ran as and the kubectl it found.
func curlKubectlHook(ns string) string {
	return `#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  cat <<EOF
configVersion: v1
kubernetes:
- name: pings
  kind: ConfigMap
  executeHookOnSynchronization: false
  namespace:
    nameSelector:
      matchNames: ["` + ns + `"]
  labelSelector:
    matchLabels:
      ping: "yes"
EOF
  exit 0
fi
for name in $(jq -r '.[] | select(.type == "Event" and .watchEvent == "Added") | .object.metadata.name' "$BINDING_CONTEXT_PATH"); do
  code=$(curl -sS -o /dev/null -w '%{http_code}' "http://$HOOK_OPERATOR_LISTEN_ADDRESS/healthz")
  /bin/kubectl -n ` + ns + ` create configmap "$name-ack" --from-literal=curl="$code" \
    --from-literal=uid="$(id -u)" --from-literal=kubectl="$(command -v kubectl)" >/dev/null
done
`
}

// An image built the way a shell-operator user builds one (FROM our image,
// COPY hooks /hooks, shell-operator's ENTRYPOINT ["/sbin/tini", "--",
// "/shell-operator"] and CMD ["start"]) runs its hook against the local
// cluster: the hook uses curl and /bin/kubectl, as hooks written for
// shell-operator's image do, and runs as the image's user, 65532.
func TestIntegrationDerivedImage(t *testing.T) {
	c := testcluster.Get(t)
	e := builtImage(t)
	ns := c.Namespace(t)

	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(derivedDockerfile), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "hooks"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "hooks", "ping.sh"), []byte(curlKubectlHook(ns)), 0o755))
	image := "hook-operator-derived:" + ns
	build := []string{"build", "-t", image}
	if e.cmd[0] != "docker" {
		build = append(build, "--pull=never", "--identity-label=false")
	}
	e.must(t, append(build, dir)...)
	t.Cleanup(func() { _, _ = e.run(t, "rmi", "-f", image) })
	var entrypoint []string
	must(t, json.Unmarshal([]byte(e.must(t, "image", "inspect", "--format", "{{json .Config.Entrypoint}}", image)), &entrypoint))
	if strings.Join(entrypoint, " ") != "/sbin/tini -- /shell-operator" {
		t.Fatalf("the derived image's entrypoint is %q", entrypoint)
	}

	ctr := startImage(t, e, c, ns, "", image, nil)
	ping(t, c, ns)
	waitFor(t, "the hook's ack", time.Minute, func() bool { return acked(c, ns, "ping") }, ctr.logs)
	ack, err := c.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "ping-ack", metav1.GetOptions{})
	must(t, err)
	for k, want := range map[string]string{"curl": "200", "uid": "65532", "kubectl": "/usr/local/bin/kubectl"} {
		if ack.Data[k] != want {
			t.Errorf("the hook's ack: %s=%q, want %q (%v)", k, ack.Data[k], want, ack.Data)
		}
	}
	if logs := ctr.logs(); !strings.Contains(logs, `"hook":"ping.sh"`) {
		t.Errorf("the operator's log does not name the copied hook ping.sh:\n%s", logs)
	}
}
