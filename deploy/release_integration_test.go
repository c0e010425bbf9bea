package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// pythonAckHook is ackHook in Python on hooks/lib/hook_operator.py, the
// image's copy at /hooks/lib: for each ConfigMap labelled ping=yes added in
// ns, <name>-ack with the uid it ran as and python's version.
func pythonAckHook(ns string) string {
	return `#!/usr/bin/env python3
import os, sys
sys.path.insert(0, "/hooks/lib")
import hook_operator as hook

CONFIG = {"configVersion": "v1", "kubernetes": [{"name": "pings", "kind": "ConfigMap",
    "executeHookOnSynchronization": False,
    "namespace": {"nameSelector": {"matchNames": ["` + ns + `"]}},
    "labelSelector": {"matchLabels": {"ping": "yes"}}}]}

def handle():
    for item in hook.objects("pings"):
        if item["event"] != "Added":
            continue
        meta = item["object"]["metadata"]
        hook.create_or_update({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": meta["name"] + "-ack", "namespace": meta["namespace"]},
            "data": {"uid": str(os.getuid()), "python": sys.version.split()[0]}})

hook.run(handle, CONFIG)
`
}

// The release's images, as make release writes them (an OCI layout), run
// here (this machine's architecture) as deploy/ runs them: the image runs
// a mounted bash hook that uses jq and the image's kubectl; the -python
// variant runs a Python hook on hooks/lib/hook_operator.py. Both hooks run
// as 65532.
func TestIntegrationReleaseImages(t *testing.T) {
	c := testcluster.Get(t)
	dir, version, _ := release(t)
	e, err := findEngine(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if e.cmd[0] == "docker" {
		t.Skip("loading an OCI image layout needs podman (its oci: transport); docker loads archives: run with podman, which hack/image/engine.sh installs")
	}
	for _, c2 := range []struct {
		tag   string
		hooks func(ns string) map[string]string
	}{
		{version, func(ns string) map[string]string { return map[string]string{"ack.sh": ackHook(ns)} }},
		{version + "-python", func(ns string) map[string]string { return map[string]string{"ack.py": pythonAckHook(ns)} }},
	} {
		t.Run(c2.tag, func(t *testing.T) {
			image := "localhost/hook-operator-release:" + c2.tag
			// podman names an image pulled from a layout after the
			// layout's path as given, which must be lowercase: a link of
			// a name of the test's own, in the folder pull runs in, then
			// untagged. pull -q prints the image's ID: tag that.
			link := t.TempDir()
			must(t, os.Symlink(filepath.Join(dir, "oci"), filepath.Join(link, "hook-operator-release-layout")))
			pull := exec.Command(e.cmd[0], append(e.cmd[1:], "pull", "-q", "oci:hook-operator-release-layout:"+c2.tag)...)
			pull.Dir, pull.Env = link, e.env
			out, err := pull.CombinedOutput()
			if err != nil {
				t.Fatalf("podman pull oci:%s:%s: %v\n%s", filepath.Join(dir, "oci"), c2.tag, err, out)
			}
			id := strings.TrimSpace(string(out))
			e.must(t, "tag", id, image)
			e.must(t, "untag", id, "localhost/hook-operator-release-layout:latest")
			t.Cleanup(func() { _, _ = e.run(t, "rmi", "-f", image) })
			if size, err := strconv.ParseInt(e.must(t, "image", "inspect", "--format", "{{.Size}}", image), 10, 64); err == nil {
				t.Logf("%s: %.1f MB unpacked", c2.tag, float64(size)/(1<<20))
			}
			ns := c.Namespace(t)
			ctr := startImage(t, e, c, ns, "/hooks/custom", image, c2.hooks(ns))
			ping(t, c, ns)
			waitFor(t, "the hook's ack", time.Minute, func() bool { return acked(c, ns, "ping") }, ctr.logs)
			ack, err := c.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "ping-ack", metav1.GetOptions{})
			must(t, err)
			if ack.Data["uid"] != "65532" {
				t.Errorf("the hook ran as uid %q, want 65532", ack.Data["uid"])
			}
		})
	}
}
