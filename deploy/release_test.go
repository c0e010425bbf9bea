package deploy_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// hack/release/chart.sh packages the chart for a release: the package is
// named for the release's SemVer, deploys the release's image tag by
// default, and carries values.schema.json, so that helm refuses bad values
// of the packaged chart too.
func TestReleaseChartPackage(t *testing.T) {
	helm(t) // built once, before the script asks for it
	out := t.TempDir()
	script := filepath.Join(repoRoot(t), "hack", "release", "chart.sh")
	got := strings.TrimSpace(string(run(t, repoRoot(t), nil, script, "v1.2.3-rc.1", out)))
	if want := filepath.Join(out, "hook-operator-1.2.3-rc.1.tgz"); got != want {
		t.Fatalf("chart.sh printed %q, want %q", got, want)
	}

	objs := objects(t, run(t, out, nil, helm(t), "template", "hook-operator", got, "--namespace", "ops"))
	containers, _, _ := unstructured.NestedSlice(one(t, objs, "Deployment").Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatal("packaged chart: the Deployment has no containers")
	}
	image := containers[0].(map[string]any)["image"]
	if want := "ghcr.io/hook-operator/hook-operator:v1.2.3-rc.1"; image != want {
		t.Errorf("packaged chart's image %q, want %q", image, want)
	}

	cmd := exec.Command(helm(t), "template", "hook-operator", got, "--set", "replica=3")
	if msg, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(msg), "additional properties 'replica' not allowed") {
		t.Errorf("packaged chart with a misspelt key: err %v, output\n%s\nwant the schema to refuse it", err, msg)
	}

	cmd = exec.Command(script, "1.2", out)
	if msg, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(msg), "give one like v1.2.3") {
		t.Errorf("chart.sh 1.2: err %v, output\n%s\nwant it refused with the expected form", err, msg)
	}
}
