package deploy_test

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The image's own files, laid out on this machine: the top layer of this
// machine's image of the release the tests build (release.sh stacks the
// files hack/release/files.sh builds onto the Debian root), the bytes that
// make release ships and make image loads, unpacked into a temp folder with
// the modes the layer gives them. The layer's entries are kept too, for
// what unpacking does not show (owners). Once per test binary; TestMain
// removes it.
var (
	imageOnce    sync.Once
	imageDir     string                 // holds root/
	imageEntries map[string]*tar.Header // "/usr/local/bin/kubectl" -> its entry in the layer
	imageErr     string
)

// imageRoot returns the root folder of the image's own files
// (usr/local/bin, examples/hooks, hooks/lib, the shell framework; tmp).
func imageRoot(t *testing.T) string {
	t.Helper()
	dir, version, _ := release(t)
	imageOnce.Do(func() { imageErr = unpackImageFiles(t, filepath.Join(dir, "oci"), version) })
	if imageErr != "" {
		t.Fatal(imageErr)
	}
	return filepath.Join(imageDir, "root")
}

// unpackImageFiles unpacks the top layer of the linux/GOARCH image tagged
// tag in the layout oci under imageDir/root, and returns "" or what failed.
func unpackImageFiles(t *testing.T, oci, tag string) string {
	platform := "linux/" + runtime.GOARCH
	manifest, ok := platformManifests(t, oci, tag)[platform]
	if !ok || len(manifest.Layers) < 2 {
		return fmt.Sprintf("%s: no %s image of a root and the image's files (%d layers)", tag, platform, len(manifest.Layers))
	}
	dir, err := os.MkdirTemp("", "hook-operator-image-")
	if err != nil {
		return err.Error()
	}
	imageDir = dir
	root := filepath.Join(dir, "root")
	top := manifest.Layers[len(manifest.Layers)-1]
	imageEntries = map[string]*tar.Header{}
	type dirMode struct {
		path string
		mode os.FileMode
	}
	var dirs []dirMode
	err = eachLayerEntry(t, oci, top.Digest, func(h *tar.Header, r io.Reader) error {
		name := path.Clean("/" + h.Name)
		if name == "/" {
			return nil
		}
		imageEntries[name] = h
		to := filepath.Join(root, filepath.FromSlash(name))
		mode := os.FileMode(h.Mode).Perm()
		var err error
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(to, 0o755)
			dirs = append(dirs, dirMode{to, mode})
		case tar.TypeReg:
			var f *os.File
			if f, err = os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
				_, err = io.Copy(f, r)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err == nil {
				err = os.Chmod(to, mode) // exactly the layer's mode, whatever the umask
			}
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, to)
		default:
			err = fmt.Errorf("entry of type %q: the image's files are folders, files and links", h.Typeflag)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return err.Error()
	}
	// Folders' modes last, the deepest first, so that a read-only folder
	// was still writable while it was filled.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode); err != nil {
			return err.Error()
		}
	}
	// The image's /tmp, which the root layer has; in a Pod, the emptyDir.
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o1777); err != nil {
		return err.Error()
	}
	return ""
}

func TestMain(m *testing.M) {
	code := m.Run()
	if imageDir != "" {
		os.RemoveAll(imageDir)
	}
	if releaseDir != "" { // built by release, not given
		os.RemoveAll(filepath.Dir(releaseDir))
	}
	os.Exit(code)
}

// mountConfigMap makes dir look like a Kubernetes ConfigMap volume holding
// files (name -> content) with defaultMode 0555: the files in a timestamped
// hidden folder, "..data" a symlink to it, each key a symlink through it.
func mountConfigMap(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	stamp := filepath.Join(dir, "..2026_01_01_00_00_00.000000001")
	if err := os.MkdirAll(stamp, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(stamp, name), data, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Base(stamp), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// exampleHooks returns the hooks of deploy/hooks, which kustomize puts in
// the ConfigMap hook-operator-hooks.
func exampleHooks(t *testing.T) map[string][]byte {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "deploy", "hooks")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	return files
}

// podRoot returns a copy of the image's files with the ConfigMap of
// deploy/hooks mounted at /hooks/custom, as deploy/deployment.yaml mounts it.
func podRoot(t *testing.T) string {
	t.Helper()
	pod := filepath.Join(t.TempDir(), "root")
	if b, err := exec.Command("cp", "-a", imageRoot(t), pod).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, b)
	}
	custom := filepath.Join(pod, "hooks", "custom")
	if err := os.Mkdir(custom, 0o755); err != nil {
		t.Fatal(err)
	}
	mountConfigMap(t, custom, exampleHooks(t))
	return pod
}

// The image holds the binary, the shipped demonstration hooks in
// /examples/hooks (bash hooks and their libraries, the Go hooks built, no Go
// sources), and in /hooks the bash helpers alone. With the example ConfigMap
// mounted at /hooks/custom, `hook-operator hooks list --hooks-dir /hooks`
// finds that hook and nothing else; in /examples/hooks it finds and accepts
// every demonstration.
func TestImageHooks(t *testing.T) {
	pod := podRoot(t)
	bin := filepath.Join(pod, "usr", "local", "bin", "hook-operator")
	if info, err := os.Stat(bin); err != nil || info.Mode()&0o111 == 0 {
		t.Fatalf("the image has no executable /usr/local/bin/hook-operator: %v", err)
	}

	// What the repository ships, as the image must have it: the hooks'
	// tracked files but Go sources and test data, with git's modes
	// (executable or not; readable by all, writable by the owner alone).
	repoHooks := filepath.Join(repoRoot(t), "hooks")
	tracked := strings.TrimSpace(string(run(t, repoRoot(t), nil, "git", "ls-files", "-s", "--", "hooks")))
	imageHooks := filepath.Join(pod, "examples", "hooks")
	for _, line := range strings.Split(tracked, "\n") {
		meta, file, _ := strings.Cut(line, "\t")
		rel := strings.TrimPrefix(file, "hooks/")
		if strings.HasSuffix(rel, ".go") || path.Base(rel) == "go.mod" || path.Base(rel) == "go.sum" || slices.Contains(strings.Split(rel, "/"), "testdata") {
			continue
		}
		want := os.FileMode(0o644)
		if strings.HasPrefix(meta, "100755 ") {
			want = 0o755
		}
		got, err := os.Lstat(filepath.Join(imageHooks, rel))
		if err != nil {
			t.Errorf("/examples/hooks/%s is missing: %v", rel, err)
			continue
		}
		if got.Mode() != want {
			t.Errorf("/examples/hooks/%s has mode %v, want %v (the repository's %s)", rel, got.Mode(), want, meta[:6])
		}
	}
	var goHooks []string
	err := filepath.WalkDir(imageHooks, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".go") || d.Name() == "go.mod" || d.Name() == "testdata" {
			t.Errorf("the image's /examples/hooks holds Go source or test data: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(repoHooks)
	for _, e := range entries {
		if e.IsDir() && isGoMain(t, filepath.Join(repoHooks, e.Name())) {
			exe := filepath.Join(imageHooks, e.Name(), e.Name())
			if info, err := os.Stat(exe); err != nil || info.Mode()&0o111 == 0 {
				t.Errorf("the Go hook hooks/%s is not built into /examples/hooks/%s/%s: %v", e.Name(), e.Name(), e.Name(), err)
			}
			goHooks = append(goHooks, e.Name()+"/"+e.Name())
		}
	}
	if len(goHooks) == 0 {
		t.Error("no Go hook found in hooks/; the image build of Go hooks is untested")
	}

	// Every demonstration is found and its configuration is valid.
	list := func(dir string) []string {
		out := run(t, pod, nil, bin, "hooks", "list", "--hooks-dir", dir, "-o", "json")
		var listed []struct {
			Name string `json:"name"` // the path under the hooks folder
		}
		if err := json.Unmarshal(out, &listed); err != nil {
			t.Fatalf("hooks list -o json: %v\n%s", err, out)
		}
		var found []string
		for _, h := range listed {
			found = append(found, h.Name)
		}
		return found
	}
	found := list(imageHooks)
	for _, h := range append(goHooks, "hello/greet-configmaps.sh") {
		if !slices.Contains(found, h) {
			t.Errorf("hooks list --hooks-dir /examples/hooks does not list %s: %v", h, found)
		}
	}
	// /hooks: the bash helpers, and the mounted hooks alone.
	entries, _ = os.ReadDir(filepath.Join(pod, "hooks"))
	for _, e := range entries {
		if e.Name() != "lib" && e.Name() != "custom" {
			t.Errorf("the image's /hooks holds %s; it must hold lib/ only", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(pod, "hooks", "lib", "hook.sh")); err != nil {
		t.Errorf("the bash helpers are not at /hooks/lib: %v", err)
	}
	if got := list(filepath.Join(pod, "hooks")); !slices.Equal(got, []string{"custom/example.sh"}) {
		t.Errorf("hooks list --hooks-dir /hooks with deploy/hooks at /hooks/custom: %v, want the mounted hook alone", got)
	}
}

// Every entry of the image's own layer is root's and writable by root
// alone: the operator's user (65532) runs the hooks and the binaries but
// cannot change them.
func TestImageFilesOwnedByRoot(t *testing.T) {
	imageRoot(t)
	var owned, writable []string
	for name, h := range imageEntries {
		if h.Uid != 0 || h.Gid != 0 {
			owned = append(owned, fmt.Sprintf("%s (%d:%d)", name, h.Uid, h.Gid))
		}
		if h.Typeflag != tar.TypeSymlink && h.Mode&0o022 != 0 {
			writable = append(writable, fmt.Sprintf("%s (%v)", name, os.FileMode(h.Mode).Perm()))
		}
	}
	slices.Sort(owned)
	slices.Sort(writable)
	if len(owned) > 0 {
		t.Errorf("%d of the image layer's %d entries are not root's (0:0), among them %v", len(owned), len(imageEntries), owned[:min(len(owned), 5)])
	}
	if len(writable) > 0 {
		t.Errorf("%d of the image layer's entries are writable by others than their owner: %v", len(writable), writable[:min(len(writable), 5)])
	}
	if len(imageEntries) < 10 {
		t.Errorf("the image's layer has %d entries", len(imageEntries))
	}
}

// The image's own programs are the ones built for it: the operator reports
// the release's version and commit (the Makefile's -ldflags, as files.sh
// passes them), and kubectl the Kubernetes version the local cluster runs
// (hack/cluster/versions.env), as files.sh stamps it.
func TestImageTools(t *testing.T) {
	root := imageRoot(t)
	_, version, _ := release(t)
	commit := strings.TrimSpace(string(run(t, repoRoot(t), nil, "git", "rev-parse", "--short", "HEAD")))
	out := string(run(t, root, nil, filepath.Join(root, "usr", "local", "bin", "hook-operator"), "version"))
	if !regexp.MustCompile(`(?m)^hook-operator `+regexp.QuoteMeta(version)+`$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^commit:\s+`+regexp.QuoteMeta(commit)+`$`).MatchString(out) {
		t.Errorf("the image's hook-operator version:\n%s\nwant version %s and commit %s", out, version, commit)
	}
	versions, err := os.ReadFile(filepath.Join(repoRoot(t), "hack", "cluster", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	kube := regexp.MustCompile(`(?m)^KUBE_VERSION=(\S+)`).FindSubmatch(versions)
	if kube == nil {
		t.Fatal("hack/cluster/versions.env: no KUBE_VERSION")
	}
	out = string(run(t, root, nil, filepath.Join(root, "usr", "local", "bin", "kubectl"), "version", "--client"))
	if !strings.Contains(out, "Client Version: "+string(kube[1])+"\n") {
		t.Errorf("the image's kubectl version --client:\n%s\nwant Client Version: %s", out, kube[1])
	}
}

// isGoMain reports whether dir holds a Go main package (not only tests).
func isGoMain(t *testing.T, dir string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "\npackage main\n") || strings.HasPrefix(string(data), "package main\n") {
			return true
		}
	}
	return false
}

// The image has shell-operator's shell framework where shell-operator's
// image has it (/shell_lib.sh, which sources /frameworks/shell/*.sh),
// exactly as the pinned module holds it, readable by the operator's user
// and not writable by it, with the module's licence.
func TestImageShellFramework(t *testing.T) {
	root := imageRoot(t)
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/flant/shell-operator")
	cmd.Dir = filepath.Join(repoRoot(t), "hack", "tools", "shell-operator")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m github.com/flant/shell-operator: %v", err)
	}
	module := strings.TrimSpace(string(out))
	for image, inModule := range map[string]string{
		"shell_lib.sh":                                   "shell_lib.sh",
		"frameworks/shell/hook.sh":                       "frameworks/shell/hook.sh",
		"frameworks/shell/context.sh":                    "frameworks/shell/context.sh",
		"usr/share/doc/shell-operator-framework/LICENSE": "LICENSE",
	} {
		got, err := os.ReadFile(filepath.Join(root, image))
		if err != nil {
			t.Errorf("the image lacks /%s: %v", image, err)
			continue
		}
		want, err := os.ReadFile(filepath.Join(module, inModule))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("/%s differs from the pinned module's %s", image, inModule)
		}
		info, _ := os.Stat(filepath.Join(root, image))
		if info.Mode().Perm()&0o004 == 0 || info.Mode().Perm()&0o022 != 0 {
			t.Errorf("/%s has mode %v: want readable by everyone, writable by its owner (root) only", image, info.Mode().Perm())
		}
	}
}

// The image has kubectl, tini and the operator where shell-operator's image
// has them, for hooks and derived Dockerfiles written for it
// (docs/migrating.md, "Image"): /bin/kubectl, /sbin/tini and
// /shell-operator, links in the image's own layer (the Debian root is not
// merged-/usr: /bin and /sbin are folders), relative so that they resolve
// in an unpacked copy too. The operator works when run by that name.
func TestImageShellOperatorPaths(t *testing.T) {
	root := imageRoot(t)
	for name, target := range map[string]string{
		"/bin/kubectl":    "../usr/local/bin/kubectl",
		"/sbin/tini":      "../usr/bin/tini", // Debian's tini, in the root layer
		"/shell-operator": "usr/local/bin/hook-operator",
	} {
		h, ok := imageEntries[name]
		if !ok || h.Typeflag != tar.TypeSymlink || h.Linkname != target {
			t.Errorf("the image's layer has no link %s -> %s (%v)", name, target, h)
		}
		for _, dir := range []string{"/bin", "/sbin"} {
			if d, ok := imageEntries[dir]; ok && d.Typeflag != tar.TypeDir {
				t.Errorf("%s in the image's layer is not a folder (type %q): it would hide the root's", dir, d.Typeflag)
			}
		}
	}
	out := string(run(t, root, nil, filepath.Join(root, "shell-operator"), "version"))
	if !strings.HasPrefix(out, "hook-operator v") {
		t.Errorf("/shell-operator version printed:\n%s", out)
	}
	out = string(run(t, root, nil, filepath.Join(root, "bin", "kubectl"), "version", "--client"))
	if !strings.Contains(out, "Client Version: v") {
		t.Errorf("/bin/kubectl version --client printed:\n%s", out)
	}
}
