package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	"github.com/hook-operator/hook-operator/internal/cli/start"
)

var update = flag.Bool("update", false, "rewrite the generated tables of docs/ from the flag tables")

// settingsTable is every setting of docs/operating.md's table: start's and
// the log settings every command has.
func settingsTable() []envflag.Setting {
	var level, format string
	var noTime bool
	return append(start.Settings(&start.Flags{}), LogSettings(&level, &format, &noTime)...)
}

// generated checks (or, with -update, rewrites) the part of doc between
// the lines begin and end against want.
func generated(t *testing.T, doc, begin, end, want string) {
	t.Helper()
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, begin+"\n"), strings.Index(text, end+"\n")
	if i < 0 || j < i {
		t.Fatalf("%s has no lines %q ... %q around its generated table", doc, begin, end)
	}
	got := text[i+len(begin)+1 : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(doc, []byte(text[:i+len(begin)+1]+want+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := range max(len(gl), len(wl)) {
		g, w := "", ""
		if k < len(gl) {
			g = gl[k]
		}
		if k < len(wl) {
			w = wl[k]
		}
		if g != w {
			t.Fatalf("%s: the generated table differs from the flag tables at its line %d:\n got: %s\nwant: %s\n(rewrite it: go test ./internal/cli -run %s -update)", doc, k+1, g, w, t.Name())
		}
	}
}

// docs/operating.md's table of settings is made from the flag tables, so
// that a flag, its variable, its default and shell-operator's names for it
// are written once.
func TestOperatingSettingsTable(t *testing.T) {
	generated(t, "../../docs/operating.md", "<!-- settings: made by go test ./internal/cli -run TestOperatingSettingsTable -update -->",
		"<!-- end of settings -->", envflag.Markdown(settingsTable()))
}

// docs/migrating.md's table names what each of shell-operator's settings
// becomes here.
func TestMigrationTable(t *testing.T) {
	generated(t, "../../docs/migrating.md", "<!-- migration: made by go test ./internal/cli -run TestMigrationTable -update -->",
		"<!-- end of migration -->", envflag.Migration(settingsTable(), start.Ignored))
}

// docs/operating.md names every flag that has no environment variable
// (made from the commands, so that a flag added without one shows there),
// and so the claim beside its settings table, that the other flags have
// one, stays true.
func TestOperatingFlagsWithoutVariables(t *testing.T) {
	root := NewRootCommand(io.Discard, io.Discard, func(string) (string, bool) { return "", false })
	var b strings.Builder
	b.WriteString("| command | flags without an environment variable |\n| --- | --- |\n")
	rows := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		var flags []string
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" || envSuffix.MatchString(f.Usage) {
				return
			}
			name := "`--" + f.Name + "`"
			if f.Shorthand != "" {
				name = "`-" + f.Shorthand + "/--" + f.Name + "`"
			}
			flags = append(flags, name)
		})
		if len(flags) > 0 {
			rows++
			fmt.Fprintf(&b, "| `%s` | %s |\n", c.CommandPath(), strings.Join(flags, ", "))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if rows < 5 {
		t.Fatalf("only %d commands with flags without a variable", rows)
	}
	generated(t, "../../docs/operating.md", "<!-- no variables: made by go test ./internal/cli -run TestOperatingFlagsWithoutVariables -update -->",
		"<!-- end of flags without variables -->", b.String())
}
