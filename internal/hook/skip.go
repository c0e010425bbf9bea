package hook

import (
	"fmt"
	"path"
	"strings"
)

// Skipped is an entry of the hooks folder that is not run as a hook, and
// why: ignored by .hookignore, disabled by --disabled-hooks, or a hook
// whose configuration has no bindings.
type Skipped struct {
	// Name is the entry's path relative to the hooks folder; an ignored
	// folder ends with "/".
	Name string `json:"name"`
	// Reason says why, in words a user can act on.
	Reason string `json:"reason"`
}

// Skip reasons' beginnings, for whoever needs to tell them apart.
const (
	ReasonIgnored    = "ignored"
	ReasonDisabled   = "disabled"
	ReasonNoBindings = "no bindings"
)

// CheckDisabled checks --disabled-hooks patterns: hook names ("pods/a.sh")
// or globs of them, where "*", "?" and "[...]" match within one path
// element and a "**" element matches any number of them ("**/debug-*").
func CheckDisabled(patterns []string) error {
	for _, p := range patterns {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("--disabled-hooks: an empty name; list hook names or globs separated by commas, such as pods/a.sh,debug/*")
		}
		for _, el := range strings.Split(p, "/") {
			if _, err := path.Match(el, ""); err != nil {
				return fmt.Errorf("--disabled-hooks: %q: %v; write a hook name as hooks list shows it, or a glob such as debug/*", p, err)
			}
		}
	}
	return nil
}

// disabledBy returns the first pattern that matches the hook name, or "".
func disabledBy(patterns []string, name string) string {
	for _, p := range patterns {
		if matchElements(strings.Split(p, "/"), strings.Split(name, "/")) {
			return p
		}
	}
	return ""
}

// hasBindings reports whether a configuration would ever run its hook.
func hasBindings(c *Config) bool {
	return c.OnStartup != nil || len(c.Schedule) > 0 || len(c.Kubernetes) > 0 ||
		len(c.Validating) > 0 || len(c.Mutating) > 0 || len(c.Conversion) > 0
}
