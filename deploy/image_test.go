package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The image, laid out on this machine: the Dockerfile's build stage runs
// here (its RUN instructions, with its WORKDIR mapped to the repository and
// /out to a temp folder), and the runtime stage's COPY --from instructions
// place the results under a temp root as they would in the image. Built
// once per test binary; TestMain removes it.
var (
	imageOnce sync.Once
	imageDir  string // holds root/ and out/
	imageErr  string
)

// imageRoot returns the root folder of the image's files (usr/local/bin,
// hooks, tmp).
func imageRoot(t *testing.T) string {
	t.Helper()
	imageOnce.Do(func() { imageErr = buildImage(t) })
	if imageErr != "" {
		t.Fatal(imageErr)
	}
	return filepath.Join(imageDir, "root")
}

// skippedRun says why a RUN of the build stage is not run here.
func skippedRun(args string) string {
	if strings.Contains(args, "/out/kubectl") {
		// Compiling kubectl takes minutes; the bash hooks use the machine's
		// kubectl here.
		return "builds kubectl"
	}
	return ""
}

// buildImage lays the image out under imageDir and returns "" or what failed.
func buildImage(t *testing.T) string {
	root := repoRoot(t)
	df := readDockerfile(t)
	ignore := readDockerignore(t)
	dir, err := os.MkdirTemp("", "hook-operator-image-")
	if err != nil {
		return err.Error()
	}
	imageDir = dir
	src, out, img := filepath.Join(dir, "src"), filepath.Join(dir, "out"), filepath.Join(dir, "root")

	// The build stage, instruction by instruction: COPY from the context
	// (the repository less what .dockerignore leaves out) into src, which
	// stands for WORKDIR; RUN in src.
	build := df.stages[0]
	workdir := build.last("WORKDIR").args
	if workdir == "" {
		return "the build stage has no WORKDIR"
	}
	inStage := func(s string) string {
		s = strings.ReplaceAll(s, workdir+"/", src+"/")
		return strings.ReplaceAll(s, "/out/", out+"/")
	}
	env := os.Environ()
	for k, v := range build.env() {
		env = append(env, k+"="+v)
	}
	for _, dir := range []string{src, out} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err.Error()
		}
	}
	for _, in := range build.instr {
		switch in.cmd {
		case "COPY":
			srcs, dest := in.copySpec()
			if !strings.HasPrefix(dest, "/") {
				dest = workdir + "/" + dest
			}
			for _, s := range srcs {
				to := inStage(copyTarget(s, dest))
				if strings.HasSuffix(dest, "/") && !strings.HasSuffix(s, "/") {
					if info, err := os.Stat(filepath.Join(root, s)); err == nil && info.IsDir() {
						to = inStage(path.Clean(dest)) // a folder's content goes into dest
					}
				}
				if err := copyContext(root, strings.TrimSuffix(s, "/"), to, ignore); err != nil {
					return "Dockerfile line " + strconv.Itoa(in.line) + ": COPY " + s + ": " + err.Error()
				}
			}
		case "RUN":
			if why := skippedRun(in.args); why != "" {
				t.Logf("Dockerfile line %d: not run here: it %s", in.line, why)
				continue
			}
			script := inStage(in.args)
			cmd := exec.Command("sh", "-c", script)
			cmd.Dir, cmd.Env = src, env
			if b, err := cmd.CombinedOutput(); err != nil {
				return "Dockerfile line " + strconv.Itoa(in.line) + ": RUN " + script + ": " + err.Error() + "\n" + string(b)
			}
		}
	}

	// The runtime stage's copies from the build stage.
	for _, in := range df.final().all("COPY") {
		if in.flags["from"] != build.name {
			continue
		}
		srcs, dest := in.copySpec()
		for _, src := range srcs {
			from := strings.Replace(src, "/out/", out+"/", 1)
			if _, err := os.Stat(from); os.IsNotExist(err) && src == "/out/kubectl" {
				continue // not built here
			}
			to := filepath.Join(img, copyTarget(src, dest))
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err.Error()
			}
			if strings.HasSuffix(src, "/") {
				from += "."
				if err := os.MkdirAll(to, 0o755); err != nil {
					return err.Error()
				}
			}
			if b, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
				return "COPY " + src + " " + dest + ": " + err.Error() + "\n" + string(b)
			}
		}
	}
	// The image's /tmp; in a Pod, the emptyDir.
	if err := os.MkdirAll(filepath.Join(img, "tmp"), 0o1777); err != nil {
		return err.Error()
	}
	return ""
}

// copyContext copies rel (a file or folder of the build context at root)
// to the path to, leaving out what .dockerignore excludes, keeping modes.
func copyContext(root, rel, to string, ignore dockerignore) error {
	return filepath.WalkDir(filepath.Join(root, rel), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		if ignore.excludes(filepath.ToSlash(r)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		sub, _ := filepath.Rel(filepath.Join(root, rel), p)
		target := filepath.Join(to, sub)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
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

	// What the repository ships, as the image must have it.
	repoHooks := filepath.Join(repoRoot(t), "hooks")
	var want []string
	err := filepath.WalkDir(repoHooks, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoHooks, p)
		switch {
		case d.IsDir() && d.Name() == "testdata":
			return filepath.SkipDir
		case d.IsDir():
			return nil
		case strings.HasSuffix(p, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum":
			return nil
		}
		// A Go hook's executable built in the source tree is not a shipped file.
		if dir := filepath.Dir(rel); filepath.Base(dir) == d.Name() && isGoMain(t, filepath.Dir(p)) {
			return nil
		}
		want = append(want, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	imageHooks := filepath.Join(pod, "examples", "hooks")
	for _, rel := range want {
		src, _ := os.Stat(filepath.Join(repoHooks, rel))
		got, err := os.Stat(filepath.Join(imageHooks, rel))
		if err != nil {
			t.Errorf("/examples/hooks/%s is missing: %v", rel, err)
			continue
		}
		if got.Mode().Perm() != src.Mode().Perm() {
			t.Errorf("/examples/hooks/%s has mode %v, the repository's %v", rel, got.Mode().Perm(), src.Mode().Perm())
		}
	}
	var goHooks []string
	err = filepath.WalkDir(imageHooks, func(p string, d os.DirEntry, err error) error {
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
