// Package envflag lets every command-line flag also be set by an environment
// variable, with the flag winning when both are given. Operators run in
// containers, where environment variables are the usual way to configure.
package envflag

import (
	"fmt"
	"sort"
	"strings"
	"sync"

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

// Names returns the environment variables bound to a flag, or nil: those
// of Bind, then those of the flag's aliases.
func Names(f *pflag.Flag) []string {
	names := append([]string(nil), f.Annotations[annotation]...)
	for _, a := range aliasesOf(f) {
		names = append(names, a.Names...)
	}
	return names
}

// Alias is a setting of another tool (shell-operator) that a flag accepts:
// Value reads it from the environment and turns it into the flag's value;
// set is false when none of its variables is set. Names lists the
// variables, for documentation.
type Alias struct {
	Names []string
	Value func(lookup func(string) (string, bool)) (value string, set bool, err error)
}

// aliases holds the aliases of each flag, in the order they are tried.
var (
	aliasesMu sync.Mutex
	aliases   = map[*pflag.Flag][]Alias{}
)

func aliasesOf(f *pflag.Flag) []Alias {
	aliasesMu.Lock()
	defer aliasesMu.Unlock()
	return aliases[f]
}

// BindAlias adds a to the settings that may set flag when none of its own
// variables (Bind) is set.
func BindAlias(fs *pflag.FlagSet, flag string, a Alias) {
	f := fs.Lookup(flag)
	if f == nil {
		panic(fmt.Sprintf("envflag: no flag --%s to alias", flag))
	}
	aliasesMu.Lock()
	defer aliasesMu.Unlock()
	aliases[f] = append(aliases[f], a)
}

// Same is the Alias of variable name whose value the flag takes as it is.
func Same(name string) Alias {
	return Alias{Names: []string{name}, Value: func(lookup func(string) (string, bool)) (string, bool, error) {
		v, ok := lookup(name)
		return v, ok, nil
	}}
}

// Apply sets every flag of fs that was not given on the command line from the
// first of its bound environment variables that lookup finds. An invalid
// value is an error naming the variable and the flag.
func Apply(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		for _, name := range f.Annotations[annotation] {
			v, ok := lookup(name)
			if !ok {
				continue
			}
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("environment variable %s=%q (for --%s): %w", name, v, f.Name, serr)
			}
			return
		}
		for _, a := range aliasesOf(f) {
			v, ok, aerr := a.Value(lookup)
			if !ok && aerr == nil {
				continue
			}
			if aerr == nil {
				aerr = fs.Set(f.Name, v)
			}
			if aerr != nil {
				err = fmt.Errorf("environment variable %s (shell-operator's, for --%s): %w", strings.Join(a.Names, ", "), f.Name, aerr)
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
