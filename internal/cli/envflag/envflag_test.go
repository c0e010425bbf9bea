package envflag

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func newSet() (*pflag.FlagSet, *string, *time.Duration) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var dir string
	var timeout time.Duration
	Define(fs,
		Setting{Name: "hooks-dir", Value: String(&dir, "/hooks"), Usage: "hooks folder", Env: "NEW_DIR", Shell: Shell{Flag: "old-dir", Env: []string{"OLD_DIR"}}},
		Setting{Name: "timeout", Value: Duration(&timeout, time.Minute), Usage: "timeout", Env: "TIMEOUT"})
	return fs, &dir, &timeout
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestApply(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		env         map[string]string
		wantDir     string
		wantTimeout time.Duration
	}{
		{"defaults", nil, nil, "/hooks", time.Minute},
		{"env sets", nil, map[string]string{"NEW_DIR": "/a", "TIMEOUT": "5s"}, "/a", 5 * time.Second},
		{"migration name", nil, map[string]string{"OLD_DIR": "/old"}, "/old", time.Minute},
		{"first name wins", nil, map[string]string{"OLD_DIR": "/old", "NEW_DIR": "/new"}, "/new", time.Minute},
		{"flag wins", []string{"--hooks-dir=/flag"}, map[string]string{"NEW_DIR": "/env"}, "/flag", time.Minute},
		{"its flag sets ours", []string{"--old-dir=/its"}, nil, "/its", time.Minute},
		{"its flag wins over variables", []string{"--old-dir=/its"}, map[string]string{"NEW_DIR": "/env"}, "/its", time.Minute},
		{"empty value is a value", nil, map[string]string{"NEW_DIR": ""}, "", time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, dir, timeout := newSet()
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if err := Apply(fs, env(tt.env)); err != nil {
				t.Fatal(err)
			}
			if *dir != tt.wantDir || *timeout != tt.wantTimeout {
				t.Errorf("got dir %q timeout %v, want %q %v", *dir, *timeout, tt.wantDir, tt.wantTimeout)
			}
		})
	}
}

func TestApplyInvalidNamesVariable(t *testing.T) {
	fs, _, _ := newSet()
	err := Apply(fs, env(map[string]string{"TIMEOUT": "soon"}))
	if err == nil {
		t.Fatal("want an error for TIMEOUT=soon")
	}
	for _, want := range []string{"TIMEOUT", `"soon"`, "--timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestDefineDocumentsVariable(t *testing.T) {
	fs, _, _ := newSet()
	if u := fs.Lookup("hooks-dir").Usage; !strings.HasSuffix(u, "(env NEW_DIR)") {
		t.Errorf("usage %q does not name the variable", u)
	}
	got := strings.Join(All(fs), ",")
	if want := "NEW_DIR: --hooks-dir,OLD_DIR: --hooks-dir,TIMEOUT: --timeout"; got != want {
		t.Errorf("All() = %s, want %s", got, want)
	}
}

// A flag's variable is HOOK_OPERATOR_ and its name unless the table says
// otherwise; NoEnv means none.
func TestEnvName(t *testing.T) {
	var a, b, c string
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	Define(fs, Setting{Name: "kube-client-qps", Value: String(&a, "")}, Setting{Name: "x", Value: String(&b, ""), Env: "OTHER"},
		Setting{Name: "dry-run", Value: String(&c, ""), Env: NoEnv})
	if got := strings.Join(All(fs), ","); got != "HOOK_OPERATOR_KUBE_CLIENT_QPS: --kube-client-qps,OTHER: --x" {
		t.Errorf("All() = %s", got)
	}
}

// shell-operator's flag converts its value; a bool alias takes none; an
// invalid value names what is allowed.
func TestAliasFlag(t *testing.T) {
	var format string
	var noTime bool
	upper := func(v string) (string, error) {
		if v == "bad" {
			return "", errors.New("use json, text or color")
		}
		return strings.ToUpper(v), nil
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	Define(fs, Setting{Name: "log-format", Value: String(&format, "text"), Shell: Shell{Flag: "log-type", Convert: upper}},
		Setting{Name: "log-no-time", Value: Bool(&noTime, false), Shell: Shell{Flag: "log-no-time-alias"}})
	if err := fs.Parse([]string{"--log-type", "json", "--log-no-time-alias"}); err != nil {
		t.Fatal(err)
	}
	if format != "JSON" || !noTime || !fs.Lookup("log-format").Changed {
		t.Errorf("format %q, noTime %t, changed %t", format, noTime, fs.Lookup("log-format").Changed)
	}
	if !fs.Lookup("log-type").Hidden {
		t.Error("the alias shows in --help")
	}
	if err := fs.Parse([]string{"--log-type=bad"}); err == nil || !strings.Contains(err.Error(), "json, text or color") {
		t.Errorf("--log-type=bad: %v", err)
	}
}

// An ignored setting is accepted, and Given names it once, with why.
func TestIgnored(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	DefineIgnored(fs, Ignored{Flag: "keep", Env: []string{"KEEP"}, Bool: true, Why: "runs are private"},
		Ignored{Flag: "lib", Env: []string{"LIB"}, Why: "no modules"}, Ignored{Env: []string{"PORT"}, Why: "one port"})
	if err := fs.Parse([]string{"--keep"}); err != nil {
		t.Fatal(err)
	}
	got := Given(fs, env(map[string]string{"KEEP": "1", "PORT": "1"}))
	want := []string{"shell-operator's --keep and KEEP: accepted but not taken: runs are private",
		"shell-operator's PORT: accepted but not taken: one port"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Given = %q, want %q", got, want)
	}
	if err := fs.Parse([]string{"--keep=maybe"}); err == nil {
		t.Error("--keep=maybe was taken")
	}
}
