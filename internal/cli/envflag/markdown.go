package envflag

import (
	"fmt"
	"strings"
)

// Markdown returns the rows of docs/operating.md's table of settings for
// table (flag | environment variable | shell-operator's | default |
// meaning), one per flag with a variable; flags without one are for a
// person at a terminal, and the same document lists them apart.
func Markdown(table []Setting) string {
	var b strings.Builder
	b.WriteString("| flag | environment variable | shell-operator's flag, variable | default | meaning |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, s := range table {
		env := s.EnvVar()
		if env == "" || s.Hidden {
			continue
		}
		doc := s.Doc
		if doc == "" {
			doc = s.Usage
		}
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s | %s |\n", s.Name, env, shellText(s), s.DefaultText(), doc)
	}
	return b.String()
}

// shellText is how a setting's shell-operator names read in a table: its
// flag and variables, with the port setting of a listener and the note.
func shellText(s Setting) string {
	var names []string
	if s.Shell.Flag != "" {
		names = append(names, "`--"+s.Shell.Flag+"`")
	}
	for _, e := range s.Shell.Env {
		names = append(names, "`"+e+"`")
	}
	if len(names) == 0 {
		return "—"
	}
	text := strings.Join(names, ", ")
	if p := s.Shell.Port; p != nil {
		text += fmt.Sprintf(" (a host, joined with its port `--%s`, `%s`, default %s)", p.Flag, p.Env, p.Default)
	}
	if s.Shell.Note != "" {
		text += " (" + s.Shell.Note + ")"
	}
	return text
}

// Migration returns the rows of docs/migrating.md's table: each flag and
// variable of shell-operator's (in table and ignored), and what it
// becomes here.
func Migration(table []Setting, ignored []Ignored) string {
	var b strings.Builder
	b.WriteString("| shell-operator's flag | its variable | here |\n")
	b.WriteString("| --- | --- | --- |\n")
	for _, s := range table {
		if s.Shell.Flag == "" && len(s.Shell.Env) == 0 {
			continue
		}
		here := "`--" + s.Name + "`"
		if env := s.EnvVar(); env != "" {
			here += ", `" + env + "`"
		}
		if s.Shell.Note != "" {
			here += " (" + s.Shell.Note + ")"
		}
		if s.Shell.Port != nil {
			here += ": a host without a port is joined with the port below"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", flagText(s.Shell.Flag), envText(s.Shell.Env), here)
		if p := s.Shell.Port; p != nil {
			fmt.Fprintf(&b, "| %s | %s | the port of `--%s` (default %s) |\n", flagText(p.Flag), envText([]string{p.Env}), s.Name, p.Default)
		}
	}
	for _, g := range ignored {
		fmt.Fprintf(&b, "| %s | %s | accepted, with a warning, and not taken: %s |\n", flagText(g.Flag), envText(g.Env), g.Why)
	}
	return b.String()
}

func flagText(f string) string {
	if f == "" {
		return "—"
	}
	return "`--" + f + "`"
}

func envText(names []string) string {
	if len(names) == 0 {
		return "—"
	}
	return "`" + strings.Join(names, "`, `") + "`"
}
