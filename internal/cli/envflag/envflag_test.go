package envflag

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func newSet() (*pflag.FlagSet, *string, *time.Duration) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	dir := fs.String("hooks-dir", "/hooks", "hooks folder")
	timeout := fs.Duration("timeout", time.Minute, "timeout")
	Bind(fs, "hooks-dir", "NEW_DIR", "OLD_DIR")
	Bind(fs, "timeout", "TIMEOUT")
	return fs, dir, timeout
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

func TestBindDocumentsVariable(t *testing.T) {
	fs, _, _ := newSet()
	if u := fs.Lookup("hooks-dir").Usage; !strings.HasSuffix(u, "(env NEW_DIR)") {
		t.Errorf("usage %q does not name the variable", u)
	}
	got := strings.Join(All(fs), ",")
	if want := "NEW_DIR: --hooks-dir,OLD_DIR: --hooks-dir,TIMEOUT: --timeout"; got != want {
		t.Errorf("All() = %s, want %s", got, want)
	}
}
