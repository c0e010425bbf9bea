// Package envflag declares each command-line setting once, as a row of a
// table (Setting), and derives from that row the flag, its environment
// variable, the names shell-operator gives the same setting, the flag's
// --help and the row of docs/operating.md. Operators run in containers,
// where environment variables are the usual way to configure; a flag given
// on the command line wins over any variable.
package envflag

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
)

// Prefix starts the variable of every flag: HOOK_OPERATOR_ and the flag's
// name in capitals, dashes made underscores (EnvName).
const Prefix = "HOOK_OPERATOR_"

// NoEnv, as a Setting's Env, says that the flag has no variable: it is
// meant for a person at a terminal or a CI job's command line.
const NoEnv = "-"

// EnvName is the variable derived from a flag's name:
// --hooks-dir → HOOK_OPERATOR_HOOKS_DIR.
func EnvName(flag string) string {
	return Prefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Setting is one row of a command's table of settings.
type Setting struct {
	// Name is the flag, without dashes; Short its one-letter form, if any.
	Name, Short string
	// Value holds the flag's value and, when defined, its default (see
	// String, Bool, Int, ... or any pflag.Value).
	Value pflag.Value
	// Usage is the flag's --help: one line.
	Usage string
	// Doc is its meaning in docs/operating.md (Markdown, links relative
	// to docs/); empty: Usage.
	Doc string
	// DocDefault is how the default reads in the docs; empty: the
	// flag's default as --help prints it (— when there is none).
	DocDefault string
	// Env is the variable: empty means EnvName(Name); NoEnv means none.
	Env string
	// NoOptDefVal is the value of the flag given without one (bool
	// flags: true, set by Define).
	NoOptDefVal string
	// Hidden keeps the flag out of --help.
	Hidden bool
	// Shell holds shell-operator's names for the same setting.
	Shell Shell
}

// Shell is how shell-operator names a setting: a flag of its own, given
// here as a hidden alias, and its variables, read when ours is not set.
type Shell struct {
	// Flag is shell-operator's flag. The same as Setting.Name: the flag
	// is one. Another: a hidden flag that sets this one.
	Flag string
	// Env are its variables, tried in order after ours.
	Env []string
	// Convert turns a value in shell-operator's format into ours (nil:
	// taken as it is); its error says which values are allowed.
	Convert func(string) (string, error)
	// Port, for a listener, is shell-operator's separate port setting:
	// its address setting (Flag, Env) is then a host, joined with it.
	Port *Port
	// Note says in the docs how shell-operator's value maps to ours,
	// where that is not plain ("color means text").
	Note string
}

// Port is shell-operator's port setting of a listener, joined to the host
// its address setting gives (or to every interface).
type Port struct {
	Flag, Env string
	// Default is shell-operator's port.
	Default string
}

// Ignored is a setting of shell-operator's that maps to nothing here. Its
// flag is accepted (hidden), so that its Deployments start unchanged;
// when it or one of its variables is given, the command warns once, with
// Why.
type Ignored struct {
	// Flag is its flag; empty: it has variables only.
	Flag string
	Env  []string
	// Bool: the flag takes no value (--log-proxy-hook-json).
	Bool bool
	// Why says what becomes of the setting here and what to use instead;
	// docs/operating.md gives the same text.
	Why string
}

// registry holds what Define learnt about each flag.
var (
	mu       sync.Mutex
	settings = map[*pflag.Flag]*Setting{}
	// ignored holds each flag set's table of DefineIgnored.
	ignored = map[*pflag.FlagSet][]Ignored{}
	// portOf maps a listener's flag to the hidden flag of
	// shell-operator's port setting.
	portOf = map[*pflag.Flag]*pflag.Flag{}
	// givenAs records, for a flag set through a variable or through
	// shell-operator's flag, that name (see GivenAs).
	givenAs = map[*pflag.Flag]string{}
)

// Define adds each setting's flag to fs, with its variable and
// shell-operator's names. It panics on a table error (a name defined
// twice), as pflag does.
func Define(fs *pflag.FlagSet, table ...Setting) {
	for i := range table {
		define(fs, table[i])
	}
}

func define(fs *pflag.FlagSet, s Setting) {
	if s.Value == nil {
		panic(fmt.Sprintf("envflag: --%s has no value", s.Name))
	}
	f := fs.VarPF(s.Value, s.Name, s.Short, s.Usage)
	f.Hidden = s.Hidden
	f.NoOptDefVal = s.NoOptDefVal
	if f.NoOptDefVal == "" && s.Value.Type() == "bool" {
		f.NoOptDefVal = "true"
	}
	if env := s.EnvVar(); env != "" {
		f.Usage += fmt.Sprintf(" (env %s)", env)
	}
	mu.Lock()
	settings[f] = &s
	mu.Unlock()
	if s.Shell.Flag != "" && s.Shell.Flag != s.Name {
		alias := fs.VarPF(&aliasValue{target: f, convert: s.Shell.Convert, name: s.Shell.Flag}, s.Shell.Flag, "", "shell-operator's name of --"+s.Name)
		alias.Hidden = true
		alias.NoOptDefVal = f.NoOptDefVal
	}
	if p := s.Shell.Port; p != nil && p.Flag != "" {
		pf := fs.VarPF(new(stringValue), p.Flag, "", "shell-operator's port of --"+s.Name)
		pf.Hidden = true
		mu.Lock()
		portOf[f] = pf
		mu.Unlock()
	}
}

// DefineIgnored adds the flags of shell-operator's settings that map to
// nothing here: accepted, hidden; Given reports them.
func DefineIgnored(fs *pflag.FlagSet, table ...Ignored) {
	mu.Lock()
	ignored[fs] = append(ignored[fs], table...)
	mu.Unlock()
	for _, g := range table {
		if g.Flag == "" {
			continue // a variable alone
		}
		f := fs.VarPF(&ignoredValue{bool: g.Bool}, g.Flag, "", "shell-operator's, accepted and not taken (docs/migrating.md)")
		f.Hidden = true
		if g.Bool {
			f.NoOptDefVal = "true"
		}
	}
}

// EnvVar returns the setting's variable, or "" when it has none.
func (s Setting) EnvVar() string {
	switch s.Env {
	case NoEnv:
		return ""
	case "":
		return EnvName(s.Name)
	}
	return s.Env
}

// settingOf returns what Define declared for f, or nil.
func settingOf(f *pflag.Flag) *Setting {
	mu.Lock()
	defer mu.Unlock()
	return settings[f]
}

// Apply sets every flag of fs that was not given on the command line from
// its variable, else from shell-operator's, and joins shell-operator's
// host and port settings of a listener. An invalid value is an error
// naming the variable or flag and the setting.
func Apply(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		s := settingOf(f)
		if s == nil {
			return
		}
		if s.Shell.Port != nil {
			err = applyListener(fs, f, s, lookup)
			return
		}
		if f.Changed {
			return
		}
		if name := s.EnvVar(); name != "" {
			if v, ok := lookup(name); ok {
				if serr := fs.Set(f.Name, v); serr != nil {
					err = fmt.Errorf("environment variable %s=%q (for --%s): %w", name, v, f.Name, serr)
				}
				recordGiven(f, name)
				return
			}
		}
		for _, name := range s.Shell.Env {
			v, ok := lookup(name)
			if !ok {
				continue
			}
			if s.Shell.Convert != nil {
				var cerr error
				if v, cerr = s.Shell.Convert(v); cerr != nil {
					err = fmt.Errorf("environment variable %s (shell-operator's, for --%s): %w", name, f.Name, cerr)
					return
				}
			}
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("environment variable %s=%q (shell-operator's, for --%s): %w", name, v, f.Name, serr)
			}
			recordGiven(f, name)
			return
		}
	})
	return err
}

func recordGiven(f *pflag.Flag, name string) {
	mu.Lock()
	givenAs[f] = name
	mu.Unlock()
}

// GivenAs returns the name under which the user gave the flag name of fs:
// "--" and the flag, or shell-operator's flag, or the variable Apply took
// it from; "" when it has its default.
func GivenAs(fs *pflag.FlagSet, name string) string {
	f := fs.Lookup(name)
	if f == nil || !f.Changed {
		return ""
	}
	mu.Lock()
	as, ok := givenAs[f]
	mu.Unlock()
	if ok {
		return as
	}
	return "--" + name
}

// Given returns one warning for each of the settings DefineIgnored added
// to fs that is given, by its flag or a variable, saying that it is not
// taken and why.
func Given(fs *pflag.FlagSet, lookup func(string) (string, bool)) []string {
	mu.Lock()
	table := ignored[fs]
	mu.Unlock()
	var out []string
	for _, g := range table {
		var by []string
		if f := fs.Lookup(g.Flag); g.Flag != "" && f != nil && f.Changed {
			by = append(by, "--"+g.Flag)
		}
		for _, name := range g.Env {
			if _, ok := lookup(name); ok {
				by = append(by, name)
			}
		}
		if len(by) > 0 {
			out = append(out, fmt.Sprintf("shell-operator's %s: accepted but not taken: %s", strings.Join(by, " and "), g.Why))
		}
	}
	return out
}

// Names returns the environment variables a flag reads, ours first, then
// shell-operator's (with its port variable); nil for a flag Define did not
// declare.
func Names(f *pflag.Flag) []string {
	s := settingOf(f)
	if s == nil {
		return nil
	}
	var names []string
	if env := s.EnvVar(); env != "" {
		names = append(names, env)
	}
	names = append(names, s.Shell.Env...)
	if p := s.Shell.Port; p != nil && p.Env != "" {
		names = append(names, p.Env)
	}
	return names
}

// All returns "VARIABLE: --flag" lines for every variable the flags of fs
// read, sorted, for documentation and tests.
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

// DefaultText is how a setting's default reads in the docs: DocDefault,
// else the flag's default in backquotes (durations shortened: 10m, not
// 10m0s), else —.
func (s Setting) DefaultText() string {
	if s.DocDefault != "" {
		return s.DocDefault
	}
	def := s.Value.String()
	if s.Value.Type() == "duration" {
		def = shortDuration(def)
	}
	switch def {
	case "", "[]", "map[]":
		return "—"
	}
	return "`" + def + "`"
}

// shortDuration drops the zero units a time.Duration prints at its end.
func shortDuration(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil || d == 0 {
		return s
	}
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
