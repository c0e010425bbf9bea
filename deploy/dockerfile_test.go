package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dockerfile is a parsed Dockerfile: its stages in order. No Docker engine
// runs on the project's machines, so the tests read the Dockerfile instead
// of building it, and run its build stage's commands themselves
// (image_test.go).
type dockerfile struct {
	stages []*stage
}

// stage is one FROM and the instructions after it.
type stage struct {
	image string // FROM's image reference
	name  string // FROM ... AS name; "" if unnamed
	line  int
	instr []instruction
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd   string            // upper case: RUN, COPY, ENV ...
	flags map[string]string // --from=build, --chown=...
	args  string            // the rest, as written
	exec  []string          // the JSON (exec) form's arguments, if used
	line  int
}

// parseDockerfile parses the instructions this project's Dockerfile uses.
// Heredocs and escape-character directives are not supported.
func parseDockerfile(text string) (*dockerfile, error) {
	df := &dockerfile{}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// Continuation lines; comment lines inside them are dropped, as
		// Docker does.
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			next := strings.TrimSpace(lines[i])
			if strings.HasPrefix(next, "#") {
				line = strings.TrimSuffix(line, `\`) + `\`
				continue
			}
			line = strings.TrimSuffix(line, `\`) + " " + next
		}
		cmd, rest, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), flags: map[string]string{}, line: start}
		rest = strings.TrimSpace(rest)
		for strings.HasPrefix(rest, "--") {
			flag, after, _ := strings.Cut(rest, " ")
			k, v, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
			in.flags[k] = v
			rest = strings.TrimSpace(after)
		}
		in.args = rest
		if strings.HasPrefix(rest, "[") {
			if err := json.Unmarshal([]byte(rest), &in.exec); err != nil {
				return nil, fmt.Errorf("line %d: %s: bad exec form: %v", start, in.cmd, err)
			}
		}
		if strings.Contains(rest, "<<") && in.cmd == "RUN" {
			return nil, fmt.Errorf("line %d: heredocs are not supported by this parser", start)
		}
		if in.cmd == "FROM" {
			f := strings.Fields(rest)
			s := &stage{line: start}
			switch {
			case len(f) == 1:
				s.image = f[0]
			case len(f) == 3 && strings.EqualFold(f[1], "AS"):
				s.image, s.name = f[0], f[2]
			default:
				return nil, fmt.Errorf("line %d: FROM %s: want IMAGE [AS NAME]", start, rest)
			}
			df.stages = append(df.stages, s)
			continue
		}
		if len(df.stages) == 0 {
			if in.cmd == "ARG" {
				continue // global build arguments before the first FROM
			}
			return nil, fmt.Errorf("line %d: %s before the first FROM", start, in.cmd)
		}
		s := df.stages[len(df.stages)-1]
		s.instr = append(s.instr, in)
	}
	if len(df.stages) == 0 {
		return nil, fmt.Errorf("no FROM")
	}
	return df, nil
}

// final returns the last stage: the image.
func (df *dockerfile) final() *stage { return df.stages[len(df.stages)-1] }

// stage returns the stage named name, or nil.
func (df *dockerfile) stage(name string) *stage {
	for _, s := range df.stages {
		if s.name == name {
			return s
		}
	}
	return nil
}

// all returns the stage's instructions of cmd.
func (s *stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.instr {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// last returns the stage's last instruction of cmd (the one in force), or
// the zero instruction.
func (s *stage) last(cmd string) instruction {
	all := s.all(cmd)
	if len(all) == 0 {
		return instruction{}
	}
	return all[len(all)-1]
}

// env returns the variables the stage's ENV and ARG instructions set, ARGs
// at their defaults. Values may be double-quoted.
func (s *stage) env() map[string]string {
	env := map[string]string{}
	for _, in := range s.instr {
		switch in.cmd {
		case "ENV", "ARG":
			for _, kv := range splitQuoted(in.args) {
				k, v, ok := strings.Cut(kv, "=")
				if ok || in.cmd == "ARG" {
					env[k] = v
				}
			}
		}
	}
	return env
}

// splitQuoted splits s at spaces outside double quotes and removes the quotes.
func splitQuoted(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, seen := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, seen = !quoted, true
		case r == ' ' && !quoted:
			if cur.Len() > 0 || seen {
				out = append(out, cur.String())
			}
			cur.Reset()
			seen = false
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 || seen {
		out = append(out, cur.String())
	}
	return out
}

// copySpec is a COPY's sources and destination.
func (in instruction) copySpec() (srcs []string, dest string) {
	f := in.exec
	if f == nil {
		f = strings.Fields(in.args)
	}
	if len(f) < 2 {
		return nil, ""
	}
	return f[:len(f)-1], f[len(f)-1]
}

// copyTarget returns where a COPY of src to dest puts it: a source
// written with a trailing slash is a folder whose content goes into dest.
func copyTarget(src, dest string) string {
	if strings.HasSuffix(src, "/") {
		return path.Clean(dest)
	}
	if strings.HasSuffix(dest, "/") {
		return path.Join(dest, path.Base(src))
	}
	return dest
}

func readDockerfile(t *testing.T) *dockerfile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df, err := parseDockerfile(string(data))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	return df
}

func TestParseDockerfile(t *testing.T) {
	df, err := parseDockerfile(`# syntax=docker/dockerfile:1
ARG BASE=x
FROM golang:1.2.3 AS build
ENV A=1 B="two words"
RUN echo a \
 # a comment inside
 && echo b
COPY --from=build --chown=1:1 /out/x /bin/
FROM debian:12.1-slim
ENTRYPOINT ["/usr/bin/tini", "--", "/bin/x"]
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(df.stages) != 2 || df.stages[0].name != "build" || df.stages[0].image != "golang:1.2.3" || df.final().image != "debian:12.1-slim" {
		t.Fatalf("stages: %+v %+v", df.stages[0], df.stages[1])
	}
	env := df.stages[0].env()
	if env["A"] != "1" || env["B"] != "two words" {
		t.Errorf("env %v", env)
	}
	if got := df.stages[0].last("RUN").args; got != "echo a  && echo b" {
		t.Errorf("RUN %q", got)
	}
	cp := df.stages[0].last("COPY")
	srcs, dest := cp.copySpec()
	if cp.flags["from"] != "build" || cp.flags["chown"] != "1:1" || len(srcs) != 1 || copyTarget(srcs[0], dest) != "/bin/x" {
		t.Errorf("COPY %+v", cp)
	}
	if e := df.final().last("ENTRYPOINT").exec; len(e) != 3 || e[0] != "/usr/bin/tini" {
		t.Errorf("ENTRYPOINT %v", e)
	}
	if _, err := parseDockerfile("RUN x\n"); err == nil {
		t.Error("RUN before FROM: no error")
	}
}

// pinned matches an image reference pinned to a digest, or to a tag that
// names a full version (1.26.8-bookworm, 12.15-slim), not a moving one
// (latest, bookworm-slim, 1.26).
var pinned = regexp.MustCompile(`@sha256:[0-9a-f]{64}$|:v?\d+\.\d+(\.\d+)?(-[a-z0-9.-]+)?$`)

func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	df := readDockerfile(t)
	if len(df.stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", len(df.stages))
	}

	// Base images: pinned, never latest; Go as go.mod asks.
	for _, s := range df.stages {
		if df.stage(s.image) != nil {
			continue
		}
		if strings.Contains(s.image, ":latest") || !pinned.MatchString(s.image) {
			t.Errorf("line %d: FROM %s: pin the base image to a version or digest", s.line, s.image)
		}
	}
	build := df.stages[0]
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVersion == nil || !strings.HasPrefix(build.image, "golang:"+string(goVersion[1])+".") {
		t.Errorf("build stage FROM %s: want golang:%s.x (go.mod's go %s)", build.image, goVersion[1], goVersion[1])
	}

	// COPY --from names an earlier stage.
	for i, s := range df.stages {
		for _, in := range s.all("COPY") {
			from := in.flags["from"]
			if from == "" {
				continue
			}
			if src := df.stage(from); src == nil || indexOf(df.stages, src) >= i {
				t.Errorf("line %d: COPY --from=%s: no earlier stage of that name", in.line, from)
			}
		}
	}

	// The runtime stage: a numeric non-root user, tini as PID 1 running the
	// binary a COPY put there, the hooks in /hooks.
	final := df.final()
	user := final.last("USER").args
	if m := regexp.MustCompile(`^(\d+)(:\d+)?$`).FindStringSubmatch(user); m == nil || m[1] == "0" {
		t.Errorf("USER %q: want a numeric non-root uid[:gid], so that runAsNonRoot can verify it", user)
	}
	entry := final.last("ENTRYPOINT").exec
	if len(entry) != 3 || entry[0] != "/usr/bin/tini" || entry[1] != "--" {
		t.Fatalf("ENTRYPOINT %v: want the exec form [\"/usr/bin/tini\", \"--\", BINARY]", entry)
	}
	installsTini := false
	for _, in := range final.all("RUN") {
		installsTini = installsTini || regexp.MustCompile(`apt-get install .*\btini\b`).MatchString(in.args)
	}
	if !installsTini {
		t.Error("the runtime stage does not apt-get install tini (Debian's package puts it at /usr/bin/tini)")
	}
	copied := map[string]instruction{} // target path -> COPY
	for _, in := range final.all("COPY") {
		srcs, dest := in.copySpec()
		for _, src := range srcs {
			copied[copyTarget(src, dest)] = in
		}
	}
	if _, ok := copied[entry[2]]; !ok {
		t.Errorf("ENTRYPOINT runs %s, which no COPY of the runtime stage puts there (targets: %v)", entry[2], keys(copied))
	}
	cmd := final.last("CMD").exec
	want := []string{"start", "--hooks-dir", "/hooks", "--tmp-dir", "/tmp"}
	if strings.Join(cmd, " ") != strings.Join(want, " ") {
		t.Errorf("CMD %v, want %v", cmd, want)
	}
	// The demonstrations go to /examples/hooks, the bash helpers to
	// /hooks/lib: /hooks holds no hook of its own (the image runs only what
	// is mounted there).
	if in, ok := copied["/examples/hooks"]; !ok || in.flags["from"] == "" {
		t.Errorf("no COPY --from=... of the built hooks into /examples/hooks/ (targets: %v)", keys(copied))
	}
	if in, ok := copied["/hooks/lib"]; !ok || in.flags["from"] == "" {
		t.Errorf("no COPY --from=... of the bash helpers into /hooks/lib/ (targets: %v)", keys(copied))
	}
	for target := range copied {
		if target == "/hooks" || (strings.HasPrefix(target, "/hooks/") && target != "/hooks/lib") {
			t.Errorf("the runtime stage copies %s: /hooks must hold lib/ only, so that the image runs only the hooks mounted there", target)
		}
	}
	if in, ok := copied["/usr/local/bin/kubectl"]; !ok || in.flags["from"] == "" {
		t.Errorf("no COPY of kubectl into /usr/local/bin/ for bash hooks")
	}
	if final.last("EXPOSE").args != "9115" {
		t.Errorf("EXPOSE %q, want 9115 (the listener's default)", final.last("EXPOSE").args)
	}
	env := final.env()
	for k, v := range map[string]string{"HOOK_OPERATOR_HOOKS_DIR": "/hooks", "HOOK_OPERATOR_TMP_DIR": "/tmp", "HOOK_OPERATOR_LISTEN_ADDRESS": ":9115"} {
		if env[k] != v {
			t.Errorf("ENV %s=%q, want %q", k, env[k], v)
		}
	}
	labels := final.last("LABEL").args
	for _, l := range []string{"title", "description", "source", "version", "revision"} {
		if !strings.Contains(labels, "org.opencontainers.image."+l+"=") {
			t.Errorf("no LABEL org.opencontainers.image.%s", l)
		}
	}

	// The build stage builds hook-operator with the Makefile's -ldflags.
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	module := regexp.MustCompile(`(?m)^MODULE\s*:=\s*(\S+)`).FindSubmatch(makefile)
	ldflags := regexp.MustCompile(`(?m)^LDFLAGS\s*:=\s*(.+)$`).FindSubmatch(makefile)
	if module == nil || ldflags == nil {
		t.Fatal("Makefile: no MODULE or LDFLAGS")
	}
	var goBuild string
	for _, in := range build.all("RUN") {
		if strings.Contains(in.args, "./cmd/hook-operator") {
			goBuild = in.args
		}
	}
	for _, x := range regexp.MustCompile(`-X (\S+?)=`).FindAllSubmatch(ldflags[1], -1) {
		key := strings.ReplaceAll(string(x[1]), "$(MODULE)", string(module[1]))
		if !strings.Contains(goBuild, "-X "+key+"=") {
			t.Errorf("the build of ./cmd/hook-operator lacks the Makefile's -X %s=...", key)
		}
	}

	// kubectl is pinned to the cluster's Kubernetes version.
	versions, err := os.ReadFile(filepath.Join(root, "hack", "cluster", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	kube := regexp.MustCompile(`(?m)^KUBE_VERSION=(\S+)`).FindSubmatch(versions)
	kubectlMod, err := os.ReadFile(filepath.Join(root, "hack", "tools", "kubectl", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if kube == nil || !regexp.MustCompile(`(?m)^\s*k8s.io/kubernetes `+regexp.QuoteMeta(string(kube[1]))+`\b`).Match(kubectlMod) {
		t.Errorf("hack/tools/kubectl/go.mod does not require k8s.io/kubernetes %s (hack/cluster/versions.env)", kube[1])
	}

	// What the build stage copies from the context is in the context.
	ignore := readDockerignore(t)
	for _, s := range df.stages {
		for _, in := range s.all("COPY") {
			if in.flags["from"] != "" {
				continue
			}
			srcs, _ := in.copySpec()
			for _, src := range srcs {
				if _, err := os.Stat(filepath.Join(root, src)); err != nil {
					t.Errorf("line %d: COPY %s: %v", in.line, src, err)
				}
				if ignore.excludes(strings.TrimSuffix(src, "/")) {
					t.Errorf("line %d: COPY %s: .dockerignore leaves it out of the build context", in.line, src)
				}
			}
		}
	}
}

func indexOf(stages []*stage, s *stage) int {
	for i, x := range stages {
		if x == s {
			return i
		}
	}
	return -1
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
