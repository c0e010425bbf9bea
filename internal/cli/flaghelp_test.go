package cli

import (
	"io"
	"regexp"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// maxFlagHelp is the longest a flag's help may be; what needs more goes to
// docs/operating.md, which the help may point to.
const maxFlagHelp = 100

// envSuffix is what envflag adds to a flag's help: its variables.
var envSuffix = regexp.MustCompile(`\s*\(env [^)]*\)$`)

// Every flag's help fits in about one line of a terminal, so that --help
// stays readable.
func TestFlagHelpIsShort(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			n++
			if usage := envSuffix.ReplaceAllString(f.Usage, ""); len(usage) > maxFlagHelp {
				t.Errorf("%s --%s: help of %d characters (at most %d; put the rest in docs/operating.md):\n%s", c.CommandPath(), f.Name, len(usage), maxFlagHelp, usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(io.Discard, io.Discard, func(string) (string, bool) { return "", false }))
	if n < 50 {
		t.Fatalf("only %d flags found", n)
	}
}
