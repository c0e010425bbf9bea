package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// module writes a module of files (name → content) to a temp dir.
func module(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.26\n"
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Code that builds only on Linux fails for darwin and passes for linux; a
// vet finding in a file built only for darwin is found for darwin alone;
// test files are checked too.
func TestCheckFindsWhatOnlyAnotherPlatformBuilds(t *testing.T) {
	dir := module(t, map[string]string{
		"main.go":            "package main\n\nfunc main() { onlyLinux() }\n",
		"linux.go":           "//go:build linux\n\npackage main\n\nfunc onlyLinux() {}\n",
		"other.go":           "//go:build !linux && !darwin\n\npackage main\n\nfunc onlyLinux() {}\n",
		"vet/v.go":           "package vet\n",
		"vet/v_darwin.go":    "package vet\n\nimport \"fmt\"\n\nfunc F() string { return fmt.Sprintf(\"%d\", \"not a number\") }\n",
		"tst/t.go":           "package tst\n",
		"tst/t_test.go":      "package tst\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { t.Log(undefinedOnWindows) }\n",
		"tst/u_unix_test.go": "//go:build unix\n\npackage tst\n\nconst undefinedOnWindows = 1\n",
	})
	cases := []struct {
		goos, goarch string
		tests        bool
		want         []string // substrings of the errors, one each
	}{
		{"linux", "arm64", true, nil},
		{"darwin", "arm64", true, []string{"main.go:3:15: undefined: onlyLinux", "v_darwin.go:5:", "format %d has arg", "(printf)"}},
		{"windows", "amd64", true, []string{"undefined: undefinedOnWindows"}},
		{"windows", "amd64", false, nil},
	}
	for _, c := range cases {
		errs, n, err := check(dir, c.goos, c.goarch, c.tests, []string{"./..."})
		if err != nil {
			t.Fatalf("%s/%s: %v", c.goos, c.goarch, err)
		}
		if n == 0 {
			t.Errorf("%s/%s: no package checked", c.goos, c.goarch)
		}
		got := strings.Join(errs, "\n")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s/%s (tests %v): errors\n%s\nlack %q", c.goos, c.goarch, c.tests, got, w)
			}
		}
		if len(c.want) == 0 && len(errs) > 0 {
			t.Errorf("%s/%s (tests %v): want no errors, got\n%s", c.goos, c.goarch, c.tests, got)
		}
	}
}
