package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// imageConfig is the part of an OCI image configuration the tests read.
type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User         string
		Entrypoint   []string
		Cmd          []string
		Env          []string
		ExposedPorts map[string]struct{}
		Labels       map[string]string
		WorkingDir   string
	} `json:"config"`
}

// The runtime settings of every image of the release, as written into each
// platform's image configuration (release.sh's config.json), which the
// manifests, the chart and the docs rely on:
//   - a numeric user that is not root, the manifests' runAsUser, so that
//     runAsNonRoot can verify it without reading /etc/passwd;
//   - tini first, in the exec form, running the operator (both are
//     executables of the image's architecture: TestReleaseImagesArchitecture),
//     with the hooks folder and /tmp as arguments;
//   - the variables a shell in the container needs (docs/deploy.md, "The
//     image"), the listener's port exposed;
//   - the OCI labels, with the release's version and commit.
func TestReleaseImageConfig(t *testing.T) {
	dir, version, arches := release(t)
	oci := filepath.Join(dir, "oci")
	commit := strings.TrimSpace(string(run(t, repoRoot(t), nil, "git", "rev-parse", "--short", "HEAD")))
	for _, tag := range []string{version, version + "-python"} {
		platforms := platformManifests(t, oci, tag)
		if len(platforms) != len(arches) {
			t.Errorf("%s: platforms %v, want linux/ of %v", tag, keys(platforms), arches)
		}
		for platform, m := range platforms {
			var cf imageConfig
			if err := json.Unmarshal(blob(t, oci, m.Config.Digest), &cf); err != nil {
				t.Fatalf("%s %s: config: %v", tag, platform, err)
			}
			what := tag + " " + platform + ": "
			if cf.OS+"/"+cf.Architecture != platform {
				t.Errorf("%sthe configuration says %s/%s", what, cf.OS, cf.Architecture)
			}
			c := cf.Config

			u := regexp.MustCompile(`^(\d+):(\d+)$`).FindStringSubmatch(c.User)
			if u == nil || u[1] == "0" {
				t.Errorf("%sUser %q: want a numeric non-root uid:gid, so that runAsNonRoot can verify it", what, c.User)
			} else if uid, _ := strconv.Atoi(u[1]); uid != imageUID {
				t.Errorf("%sUser %q: the manifests run as %d", what, c.User, imageUID)
			}

			if want := []string{"/usr/bin/tini", "--", "/usr/local/bin/hook-operator"}; !slices.Equal(c.Entrypoint, want) {
				t.Errorf("%sEntrypoint %q, want %q: tini as PID 1 forwarding SIGTERM to the operator, in the exec form", what, c.Entrypoint, want)
			}
			if want := []string{"start"}; !slices.Equal(c.Cmd, want) {
				t.Errorf("%sCmd %q, want %q: a flag would win over a shell-operator Deployment's variables", what, c.Cmd, want)
			}
			env := map[string]string{}
			for _, kv := range c.Env {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			for k, v := range map[string]string{
				"SHELL_OPERATOR_HOOKS_DIR": "/hooks", // shell-operator's, so that a Deployment's own wins
				"HOME":                     "/tmp",   // kubectl's cache, in the writable /tmp
			} {
				if env[k] != v {
					t.Errorf("%sEnv %s=%q, want %q", what, k, env[k], v)
				}
			}
			for k := range env {
				if strings.HasPrefix(k, "HOOK_OPERATOR_") {
					t.Errorf("%sEnv %s: a variable of ours would win over a shell-operator Deployment's SHELL_OPERATOR_* settings", what, k)
				}
			}
			if !slices.Contains(strings.Split(env["PATH"], ":"), "/usr/local/bin") || !slices.Contains(strings.Split(env["PATH"], ":"), "/usr/bin") {
				t.Errorf("%sEnv PATH=%q: kubectl (/usr/local/bin) and Debian's tools (/usr/bin) must be on it", what, env["PATH"])
			}
			if _, ok := c.ExposedPorts[strconv.Itoa(metricsPort)+"/tcp"]; !ok || len(c.ExposedPorts) != 1 {
				t.Errorf("%sExposedPorts %v, want %d/tcp (the listener's default)", what, keys(c.ExposedPorts), metricsPort)
			}

			const project = "https://github.com/hook-operator/hook-operator"
			for k, want := range map[string]string{
				"title":         "hook-operator",
				"source":        project,
				"url":           project,
				"documentation": project + "/tree/main/docs",
				"version":       version,
				"revision":      commit,
			} {
				if got := c.Labels["org.opencontainers.image."+k]; got != want {
					t.Errorf("%slabel org.opencontainers.image.%s=%q, want %q", what, k, got, want)
				}
			}
			if c.Labels["org.opencontainers.image.description"] == "" {
				t.Errorf("%sno label org.opencontainers.image.description", what)
			}
			// The roots are unpacked from Debian's packages, on no image:
			// a base.name would name an image it is not built on.
			if base, ok := c.Labels["org.opencontainers.image.base.name"]; ok {
				t.Errorf("%slabel org.opencontainers.image.base.name=%q: the image has no base image", what, base)
			}
		}
	}
}

// make image's image (hack/image/build.sh: release.sh with
// RELEASE_IMAGE_ONLY=1, of this machine's architecture) is make release's,
// byte for byte: for the same VERSION and commit its manifest has the
// digest of the release's image of that architecture. The layout holds
// that one tag, and nothing else is written.
func TestReleaseImageOnly(t *testing.T) {
	dir, version, _ := release(t)
	platform := "linux/" + runtime.GOARCH
	want, ok := platformManifests(t, filepath.Join(dir, "oci"), version)[platform]
	if !ok {
		t.Fatalf("the release has no %s image", platform)
	}
	out := filepath.Join(t.TempDir(), "image")
	cmd := exec.Command(filepath.Join(repoRoot(t), "hack", "release", "release.sh"), version, out)
	cmd.Env = append(os.Environ(), "RELEASE_ARCHES="+runtime.GOARCH, "RELEASE_IMAGE_ONLY=1")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("RELEASE_IMAGE_ONLY=1 release.sh %s: %v\n%s", version, err, msg)
	}
	got := platformManifests(t, filepath.Join(out, "oci"), version)
	if len(got) != 1 || got[platform].Digest != want.Digest {
		var digests []string
		for p, m := range got {
			digests = append(digests, p+" "+m.Digest)
		}
		t.Errorf("RELEASE_IMAGE_ONLY=1: images %v, want %s %s alone, the release's", digests, platform, want.Digest)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "oci" {
			t.Errorf("RELEASE_IMAGE_ONLY=1 wrote %s beside oci/", e.Name())
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "oci", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var top struct{ Manifests []ociDescriptor }
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, m := range top.Manifests {
		tags = append(tags, m.Annotations["org.opencontainers.image.ref.name"])
	}
	if !slices.Equal(tags, []string{version}) {
		t.Errorf("RELEASE_IMAGE_ONLY=1: the layout's tags %q, want %s alone", tags, version)
	}
}

// hack/release/files.sh builds the operator as the Makefile's build target
// does, so that make bench measures the binary the image ships: without
// cgo, paths trimmed, with every -X of the Makefile's LDFLAGS (the image's
// binary reports them: TestImageTools). kubectl (hack/release/kubectl.sh,
// with files.sh's settings) is the one hack/tools/kubectl pins, at the
// Kubernetes version the local cluster runs (hack/cluster/versions.env),
// which kubectl.sh stamps it with.
func TestReleaseFilesBuild(t *testing.T) {
	root := repoRoot(t)
	read := func(path string) string {
		data, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	makefile, files, kubectl := read("Makefile"), read("hack/release/files.sh"), read("hack/release/kubectl.sh")

	module := regexp.MustCompile(`(?m)^MODULE\s*:=\s*(\S+)`).FindStringSubmatch(makefile)
	ldflags := regexp.MustCompile(`(?m)^LDFLAGS\s*:=\s*(.+)$`).FindStringSubmatch(makefile)
	build := regexp.MustCompile(`(?m)^build:.*\n\t(.+)$`).FindStringSubmatch(makefile)
	if module == nil || ldflags == nil || build == nil {
		t.Fatal("Makefile: no MODULE, LDFLAGS or build target")
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-ldflags '$(LDFLAGS)'"} {
		if !strings.Contains(build[1], want) {
			t.Errorf("make build (%s) lacks %s, with which the image's binary is built", build[1], want)
		}
	}
	if m := regexp.MustCompile(`(?m)^module=(\S+)$`).FindStringSubmatch(files); m == nil || m[1] != module[1] {
		t.Errorf("files.sh: no line module=%s (the Makefile's MODULE)", module[1])
	}
	for script, text := range map[string]string{"files.sh": files, "kubectl.sh": kubectl} {
		env := regexp.MustCompile(`(?m)^export .*$`).FindString(text)
		for _, want := range []string{"CGO_ENABLED=0", "-trimpath"} {
			if !strings.Contains(env, want) {
				t.Errorf("%s builds without %s (its export line: %q)", script, want, env)
			}
		}
	}
	// The go build of ./cmd/hook-operator, continuation lines and all.
	start := strings.Index(files, `go build -o "$out/usr/local/bin/hook-operator"`)
	end := strings.Index(files, "./cmd/hook-operator")
	if start < 0 || end < start {
		t.Fatal(`files.sh: no go build -o "$out/usr/local/bin/hook-operator" ... ./cmd/hook-operator`)
	}
	goBuild := files[start:end]
	xs := regexp.MustCompile(`-X (\S+?)=`).FindAllStringSubmatch(ldflags[1], -1)
	if len(xs) == 0 {
		t.Fatalf("Makefile: LDFLAGS %q sets no -X", ldflags[1])
	}
	for _, x := range xs {
		key := strings.ReplaceAll(x[1], "$(MODULE)", "$module")
		if !strings.Contains(goBuild, "-X "+key+"=") {
			t.Errorf("files.sh's build of ./cmd/hook-operator lacks the Makefile's -X %s=...", x[1])
		}
	}

	kube := regexp.MustCompile(`(?m)^KUBE_VERSION=(\S+)`).FindStringSubmatch(read("hack/cluster/versions.env"))
	if kube == nil {
		t.Fatal("hack/cluster/versions.env: no KUBE_VERSION")
	}
	if !regexp.MustCompile(`(?m)^\s*k8s.io/kubernetes ` + regexp.QuoteMeta(kube[1]) + `\b`).MatchString(read("hack/tools/kubectl/go.mod")) {
		t.Errorf("hack/tools/kubectl/go.mod does not require k8s.io/kubernetes %s (hack/cluster/versions.env)", kube[1])
	}
	if !strings.Contains(kubectl, `. "$root/hack/cluster/versions.env"`) {
		t.Error("kubectl.sh does not read hack/cluster/versions.env")
	}
	for _, x := range []string{"k8s.io/component-base/version.gitVersion", "k8s.io/client-go/pkg/version.gitVersion"} {
		if !strings.Contains(kubectl, "-X "+x+"=$KUBE_VERSION ") {
			t.Errorf("kubectl.sh does not stamp kubectl with -X %s=$KUBE_VERSION (versions.env's)", x)
		}
	}
	if !strings.Contains(files, `"$here/kubectl.sh" "$arch"`) {
		t.Error(`files.sh does not take kubectl from kubectl.sh ("$here/kubectl.sh" "$arch")`)
	}
}
