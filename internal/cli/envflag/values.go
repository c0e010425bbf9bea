package envflag

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// String, Bool, Int, Float32, Duration, StringSlice and StringToString
// return a flag value stored in p, holding def: a Setting's Value.
func String(p *string, def string) pflag.Value {
	return value(func(fs *pflag.FlagSet) { fs.StringVar(p, "v", def, "") })
}

// Bool: see String.
func Bool(p *bool, def bool) pflag.Value {
	return value(func(fs *pflag.FlagSet) { fs.BoolVar(p, "v", def, "") })
}

// Int: see String.
func Int(p *int, def int) pflag.Value {
	return value(func(fs *pflag.FlagSet) { fs.IntVar(p, "v", def, "") })
}

// Float32: see String.
func Float32(p *float32, def float32) pflag.Value {
	return value(func(fs *pflag.FlagSet) { fs.Float32Var(p, "v", def, "") })
}

// Duration: see String.
func Duration(p *time.Duration, def time.Duration) pflag.Value {
	return value(func(fs *pflag.FlagSet) { fs.DurationVar(p, "v", def, "") })
}

// StringSlice: see String. Each use of the flag adds to the list, and
// each may hold several values, comma-separated.
func StringSlice(p *[]string, def []string) pflag.Value {
	return value(func(fs *pflag.FlagSet) { fs.StringSliceVar(p, "v", def, "") })
}

// StringToString: see String (key=value,...).
func StringToString(p *map[string]string, def map[string]string) pflag.Value {
	return value(func(fs *pflag.FlagSet) { fs.StringToStringVar(p, "v", def, "") })
}

// value returns the pflag value that define makes, so that the table
// shares pflag's parsing of each type.
func value(define func(*pflag.FlagSet)) pflag.Value {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	define(fs)
	return fs.Lookup("v").Value
}

// aliasValue is a hidden flag under shell-operator's name: setting it sets
// its target (converting the value), as if the target were given.
type aliasValue struct {
	target  *pflag.Flag
	convert func(string) (string, error)
	name    string
}

func (a *aliasValue) String() string { return a.target.Value.String() }
func (a *aliasValue) Type() string   { return a.target.Value.Type() }
func (a *aliasValue) Set(v string) error {
	if a.convert != nil {
		var err error
		if v, err = a.convert(v); err != nil {
			return err
		}
	}
	if err := a.target.Value.Set(v); err != nil {
		return err
	}
	a.target.Changed = true
	recordGiven(a.target, "--"+a.name)
	return nil
}

// IsBoolFlag lets pflag take a bool alias without a value.
func (a *aliasValue) IsBoolFlag() bool { return a.target.Value.Type() == "bool" }

// stringValue holds a string (shell-operator's port of a listener).
type stringValue string

func (s *stringValue) String() string     { return string(*s) }
func (s *stringValue) Type() string       { return "string" }
func (s *stringValue) Set(v string) error { *s = stringValue(v); return nil }

// ignoredValue takes any value of an ignored setting; a bool one checks it
// is a bool, as shell-operator would.
type ignoredValue struct {
	bool bool
	v    string
}

func (i *ignoredValue) String() string { return i.v }
func (i *ignoredValue) Type() string {
	if i.bool {
		return "bool"
	}
	return "string"
}
func (i *ignoredValue) Set(v string) error {
	if i.bool {
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("use true or false")
		}
	}
	i.v = v
	return nil
}
func (i *ignoredValue) IsBoolFlag() bool { return i.bool }

// applyListener settles a listener's host:port from our flag or variable
// and from shell-operator's, which give the host and the port apart. The
// command line wins over variables; ours over shell-operator's. A value
// without a port (shell-operator's --listen-address=0.0.0.0) is a host,
// joined with shell-operator's port setting or its default port.
func applyListener(fs *pflag.FlagSet, f *pflag.Flag, s *Setting, lookup func(string) (string, bool)) error {
	p := s.Shell.Port
	mu.Lock()
	pf := portOf[f]
	mu.Unlock()
	// port returns shell-operator's port: its flag, else its variable,
	// else its default; and where it came from.
	port := func() (string, string) {
		if pf != nil && pf.Changed {
			return pf.Value.String(), "--" + pf.Name
		}
		if v, ok := lookup(p.Env); ok && p.Env != "" {
			return v, p.Env
		}
		return p.Default, ""
	}
	join := func(host, from string) error {
		port, portFrom := port()
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("%s=%q (shell-operator's port of --%s): use a port number", portFrom, port, f.Name)
		}
		if host == "0.0.0.0" {
			host = "" // every interface, IPv6 too, as shell-operator's 0.0.0.0 means in practice
		}
		if err := fs.Set(f.Name, net.JoinHostPort(host, port)); err != nil {
			return fmt.Errorf("%s (for --%s): %w", from, f.Name, err)
		}
		return nil
	}
	// settle takes a value given for f: with a port, as it is; empty, no
	// listener; else a host to join with the port.
	settle := func(v, from string) error {
		if v == "" || hasPort(v) {
			if f.Value.String() != v {
				return fs.Set(f.Name, v)
			}
			return nil
		}
		return join(v, from)
	}
	switch {
	case f.Changed:
		return settle(f.Value.String(), "--"+f.Name)
	case pf != nil && pf.Changed:
		host := ""
		for _, name := range s.Shell.Env {
			if v, ok := lookup(name); ok {
				host = v
				break
			}
		}
		return join(host, "--"+pf.Name)
	}
	if name := s.EnvVar(); name != "" {
		if v, ok := lookup(name); ok {
			if err := settle(v, name); err != nil {
				return fmt.Errorf("environment variable %s=%q (for --%s): %w", name, v, f.Name, err)
			}
			return nil
		}
	}
	for _, name := range s.Shell.Env {
		if v, ok := lookup(name); ok {
			return settle(v, name)
		}
	}
	if _, from := port(); from != "" {
		return join("", from)
	}
	return nil
}

// hasPort says whether v is host:port (or :port).
func hasPort(v string) bool {
	_, _, err := net.SplitHostPort(v)
	return err == nil
}
