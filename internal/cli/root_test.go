package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
)

func run(env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	cmd := NewRootCommand(&out, &errb, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		errb.WriteString(err.Error())
		return 1, out.String(), errb.String()
	}
	return 0, out.String(), errb.String()
}

func TestVersionJSON(t *testing.T) {
	code, out, stderr := run(nil, "version", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var info map[string]string
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("not JSON: %q", out)
	}
	if info["goVersion"] != runtime.Version() || info["version"] == "" || info["commit"] == "" {
		t.Errorf("version info %v", info)
	}
}

func TestVersionText(t *testing.T) {
	_, out, _ := run(nil, "version")
	if !strings.HasPrefix(out, "hook-operator v") || !strings.Contains(out, "go:       "+runtime.Version()) {
		t.Errorf("version output %q", out)
	}
	if code, _, stderr := run(nil, "version", "-o", "yaml"); code == 0 || !strings.Contains(stderr, "--output") {
		t.Errorf("version -o yaml: exit %d, stderr %q; want an error naming --output", code, stderr)
	}
}

func TestLogSettingsFromEnvironment(t *testing.T) {
	code, _, stderr := run(map[string]string{EnvLogFormat: "xml"}, "version")
	if code == 0 || !strings.Contains(stderr, EnvLogFormat) || !strings.Contains(stderr, `"xml"`) {
		t.Errorf("exit %d, stderr %q; want an error naming %s and the value", code, stderr, EnvLogFormat)
	}
	// The flag wins over the variable.
	if code, _, stderr := run(map[string]string{EnvLogFormat: "xml"}, "--log-format=json", "version"); code != 0 {
		t.Errorf("flag did not win over the environment: %s", stderr)
	}
	if code, _, stderr := run(nil, "--log-level=loud", "version"); code == 0 || !strings.Contains(stderr, "log level") {
		t.Errorf("--log-level=loud: exit %d, stderr %q", code, stderr)
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	root := NewRootCommand(&bytes.Buffer{}, &bytes.Buffer{}, func(string) (string, bool) { return "", false })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" {
			t.Errorf("command %q has no short help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// docs/operating.md must name every environment variable a command reads.
func TestOperatingDocNamesEveryVariable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	root := NewRootCommand(&bytes.Buffer{}, &bytes.Buffer{}, func(string) (string, bool) { return "", false })
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		for _, line := range append(envflag.All(c.LocalFlags()), envflag.All(c.PersistentFlags())...) {
			seen++
			name := strings.SplitN(line, ":", 2)[0]
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("docs/operating.md does not mention %s (%s of %q)", name, line, c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if seen < 10 {
		t.Fatalf("found only %d bound flags; the walk is broken", seen)
	}
}

// shell-operator's LOG_LEVEL and LOG_TYPE set the log settings when ours
// are not set; color is text; a bad value names the variable.
func TestShellOperatorLogVariables(t *testing.T) {
	if code, _, stderr := run(map[string]string{"LOG_TYPE": "color", "LOG_LEVEL": "debug"}, "version"); code != 0 {
		t.Errorf("LOG_TYPE=color LOG_LEVEL=debug: exit %d: %s", code, stderr)
	}
	code, _, stderr := run(map[string]string{"LOG_TYPE": "xml"}, "version")
	if code == 0 || !strings.Contains(stderr, "LOG_TYPE") || !strings.Contains(stderr, "json, text or color") {
		t.Errorf("LOG_TYPE=xml: exit %d, stderr %q; want an error naming LOG_TYPE and its values", code, stderr)
	}
	// Ours wins over shell-operator's.
	if code, _, stderr := run(map[string]string{"LOG_TYPE": "xml", EnvLogFormat: "json"}, "version"); code != 0 {
		t.Errorf("%s did not win over LOG_TYPE: %s", EnvLogFormat, stderr)
	}
}

// The README's command list names every command a user can run.
func TestReadmeListsEveryCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(readme), "## Command line")
	if start < 0 {
		t.Fatal("README.md has no \"## Command line\" section")
	}
	// The list is the section's first code block.
	_, list, _ := strings.Cut(string(readme[start:]), "\n```\n")
	list, _, _ = strings.Cut(list, "\n```\n")
	list = "\n" + list + "\n"
	var walk func(c *cobra.Command) int
	walk = func(c *cobra.Command) int {
		n := 0
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			n += walk(sub)
		}
		if c.Runnable() && c.HasParent() {
			n++
			if !listed(list, c) {
				t.Errorf("README.md's command list has no line for %q", c.CommandPath())
			}
		}
		return n
	}
	if n := walk(NewRootCommand(io.Discard, io.Discard, func(string) (string, bool) { return "", false })); n < 10 {
		t.Fatalf("only %d commands found", n)
	}
}

// listed reports whether a line of list runs c: it starts with c's path,
// or with its parent's and names c among alternatives (debug queues|hooks).
func listed(list string, c *cobra.Command) bool {
	for _, line := range strings.Split(list, "\n") {
		if strings.HasPrefix(line, c.CommandPath()+" ") {
			return true
		}
		rest, ok := strings.CutPrefix(line, c.Parent().CommandPath()+" ")
		if !ok || c.Parent().Parent() == nil {
			continue
		}
		rest, _, _ = strings.Cut(rest, "#")
		for _, word := range strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == '|' }) {
			if word == c.Name() {
				return true
			}
		}
	}
	return false
}
