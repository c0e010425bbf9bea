// Package envflag lets every command-line flag also be set by an environment
// variable, with the flag winning when both are given. Operators run in
// containers, where environment variables are the usual way to configure.
package envflag

import (
	"fmt"
	"sort"

	"github.com/spf13/pflag"
)

// annotation is the pflag annotation key holding a flag's variable names.
const annotation = "hook-operator/env"

// Bind declares that the flag may be set through the environment variables
// names, tried in order (later names are accepted for migration from other
// tools). The first name is appended to the flag's help text.
func Bind(fs *pflag.FlagSet, flag string, names ...string) {
	f := fs.Lookup(flag)
	if f == nil {
		panic(fmt.Sprintf("envflag: no flag --%s to bind", flag))
	}
	if len(names) == 0 {
		panic(fmt.Sprintf("envflag: --%s bound to no variable", flag))
	}
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[annotation] = names
	f.Usage += fmt.Sprintf(" (env %s)", names[0])
}

// Names returns the environment variables bound to a flag, or nil.
func Names(f *pflag.Flag) []string { return f.Annotations[annotation] }

// Apply sets every flag of fs that was not given on the command line from the
// first of its bound environment variables that lookup finds. An invalid
// value is an error naming the variable and the flag.
func Apply(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		for _, name := range Names(f) {
			v, ok := lookup(name)
			if !ok {
				continue
			}
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("environment variable %s=%q (for --%s): %w", name, v, f.Name, serr)
			}
			return
		}
	})
	return err
}

// All returns "VARIABLE: --flag" lines for every bound flag of fs, sorted, for
// documentation and tests.
func All(fs *pflag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *pflag.Flag) {
		for _, n := range Names(f) {
			out = append(out, n+": --"+f.Name)
		}
	})
	sort.Strings(out)
	return out
}
