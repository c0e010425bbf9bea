package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
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
	container, _ := operatorContainer(t, objs)
	image := container["image"]
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

// readYAMLFile reads the YAML file at path (relative to the repository)
// into v.
func readYAMLFile(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// The registry path that make release-push pushes to (the Makefile's
// REGISTRY) is the image that deploy/ and the chart run, at the release the
// chart is versioned as: the manifests' tag, the kustomization's newTag and
// the chart's appVersion are "v" + the chart's version. The release
// workflow pushes with the make targets.
func TestReleaseReferencesInStep(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^REGISTRY \?= (\S+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("Makefile: no `REGISTRY ?= REPOSITORY` line (the default of make release-push)")
	}
	registry := string(m[1])

	var chartMeta struct{ Version, AppVersion string }
	readYAMLFile(t, "deploy/helm/hook-operator/Chart.yaml", &chartMeta)
	version := "v" + chartMeta.Version
	if chartMeta.AppVersion != version {
		t.Errorf("Chart.yaml: appVersion %s, want v+version %s (make chart sets both from VERSION)", chartMeta.AppVersion, version)
	}
	var values struct {
		Image struct{ Repository, Tag string }
	}
	readYAMLFile(t, "deploy/helm/hook-operator/values.yaml", &values)
	if values.Image.Repository != registry || values.Image.Tag != "" {
		t.Errorf("values.yaml: image %s tag %q, want %s with no tag (the chart's appVersion)", values.Image.Repository, values.Image.Tag, registry)
	}
	var kust struct {
		Images []struct{ Name, NewTag string }
	}
	readYAMLFile(t, "deploy/kustomization.yaml", &kust)
	if len(kust.Images) != 1 || kust.Images[0].Name != registry || kust.Images[0].NewTag != version {
		t.Errorf("deploy/kustomization.yaml: images %+v, want %s with newTag %s", kust.Images, registry, version)
	}
	deployment, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "image: " + registry + ":" + version + "\n"; !strings.Contains(string(deployment), want) {
		t.Errorf("deploy/deployment.yaml does not run %s:%s (want a line %q)", registry, version, strings.TrimSpace(want))
	}

	workflow, err := os.ReadFile(filepath.Join(repoRoot(t), ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"make release-check VERSION=", "make release-push VERSION=", "make release-sign-keyless VERSION=", "id-token: write"} {
		if !strings.Contains(string(workflow), want) {
			t.Errorf(".github/workflows/release.yml does not run %q", want)
		}
	}
	// The workflow pushes to the owner of the repository it runs in (the
	// project's own is hook-operator, a fork's its owner), and signs there.
	if !strings.HasPrefix(registry, "ghcr.io/hook-operator/") || strings.Count(string(workflow), "REGISTRY=ghcr.io/${{ github.repository_owner }}/hook-operator") != 2 {
		t.Errorf("the workflow pushes elsewhere than the Makefile's REGISTRY %s: give REGISTRY=ghcr.io/${{ github.repository_owner }}/hook-operator", registry)
	}
}

// hack/release/release.sh refuses an architecture it cannot build, an
// RELEASE_SBOMS or RELEASE_IMAGE_ONLY other than 0 or 1, and SBOMs asked of
// the image alone, before it builds anything, saying what to give: make
// test's release is of one architecture without SBOMs, make image's the
// image alone, and a misspelt setting must not quietly give another release.
func TestReleaseScriptRefusesBadSettings(t *testing.T) {
	script := filepath.Join(repoRoot(t), "hack", "release", "release.sh")
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"RELEASE_ARCHES=amd64 riscv64"}, "RELEASE_ARCHES: riscv64: give amd64, arm64 or both"},
		{[]string{"RELEASE_ARCHES= "}, "RELEASE_ARCHES is empty"},
		{[]string{"RELEASE_SBOMS=no"}, "RELEASE_SBOMS=no: give 1 (SBOMs, the default) or 0"},
		{[]string{"RELEASE_IMAGE_ONLY=yes"}, "RELEASE_IMAGE_ONLY=yes: give 1 (the image alone) or 0"},
		{[]string{"RELEASE_IMAGE_ONLY=1", "RELEASE_SBOMS=1"}, "RELEASE_IMAGE_ONLY=1 writes no SBOMs"},
	} {
		out := filepath.Join(t.TempDir(), "dist")
		cmd := exec.Command(script, "v1.2.3", out)
		cmd.Env = append(os.Environ(), c.env...)
		msg, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(msg), c.want) {
			t.Errorf("%s release.sh v1.2.3: err %v, output\n%s\nwant it refused with %q", c.env, err, msg, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s release.sh v1.2.3: wrote %s before refusing", c.env, out)
		}
	}
}
