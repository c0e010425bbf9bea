package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// ParseConfig validates the output of `<hook> --config` (YAML or JSON) into
// a Config, applying the defaults of configVersion v1. hookName names the
// hook in errors. The error, when not nil, is ConfigErrors listing every
// problem found, each with its field path and what to change.
//
// A configuration without bindings (only settings, as shell-operator hooks
// print to turn themselves off) is valid; Load skips its hook.
func ParseConfig(hookName string, data []byte) (Config, error) {
	c := &checker{hook: hookName}
	if len(bytes.TrimSpace(data)) == 0 {
		c.errorf("", "--config printed nothing; print the configuration as YAML or JSON, starting with configVersion: v1")
		return Config{}, c.errs
	}
	if err := checkAliases(data); err != nil {
		c.errorf("", "--config output: %v", err)
		return Config{}, c.errs
	}
	raw, err := decode(data)
	if err != nil {
		c.errorf("", "--config output is not valid YAML or JSON: %s", syntaxProblem(data, err))
		return Config{}, c.errs
	}
	cfg := c.config(raw)
	if len(c.errs) > 0 {
		return Config{}, c.errs
	}
	return cfg, nil
}

// checkAliases refuses a document whose aliases expand it beyond
// limit.CheckYAML's bound. Output that does not parse is left to decode,
// which says why.
func checkAliases(data []byte) error {
	if !bytes.ContainsRune(data, '*') {
		return nil
	}
	var n yaml3.Node
	if yaml3.Unmarshal(data, &n) != nil {
		return nil
	}
	return limit.CheckYAML(&n, len(data))
}

// yamlLine finds the line number in a YAML parser's error.
var yamlLine = regexp.MustCompile(`\bline (\d+):`)

// syntaxProblem renders a YAML or JSON syntax error of data with the line
// it names, quoted, and a hint that fits the error.
func syntaxProblem(data []byte, err error) string {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		lines := strings.Split(string(data), "\n")
		if n >= 1 && n <= len(lines) {
			msg += fmt.Sprintf("; line %d is %q", n, limit.Quote(lines[n-1]))
		}
	}
	switch {
	case strings.Contains(msg, "tab character"):
		return msg + "; indent with spaces, not tabs"
	case strings.Contains(msg, "mapping values are not allowed"):
		return msg + "; indent the line like the other keys of its object, and quote a value that contains \": \""
	case strings.Contains(msg, "did not find expected alphabetic or numeric character"), strings.Contains(msg, "unknown anchor"):
		return msg + "; quote values that start with * or &"
	}
	return msg + "; fix what --config prints"
}

// decode turns YAML or JSON into plain values, keeping numbers as
// json.Number so that integers are told from fractions exactly. Duplicate
// keys are errors.
func decode(data []byte) (any, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// snapshotRef is an includeSnapshotsFrom list waiting for every kubernetes
// binding name to be known.
type snapshotRef struct {
	path  string
	names []string
}

func (c *checker) config(raw any) Config {
	var cfg Config
	top, ok := raw.(map[string]any)
	if !ok {
		c.errorf("", "--config must print an object (configVersion: v1 and bindings), not %s", describe(raw))
		return cfg
	}
	o := &object{c: c, path: "", m: top}

	v, ok := o.get("configVersion")
	switch {
	case !ok:
		c.errorf("configVersion", "missing; add configVersion: v1 (hook-operator runs hooks written for shell-operator's configVersion v1)")
	case v != "v1":
		reason := "is not supported"
		if v == "v0" {
			reason = "is the legacy format, which is not supported"
		}
		c.errorf("configVersion", "%s %s; write the configuration for configVersion: v1 and set configVersion: v1", describe(v), reason)
		// The other keys mean something else under other versions.
		return cfg
	}
	if o.has("onKubernetesEvent") {
		o.get("onKubernetesEvent")
		c.errorf("onKubernetesEvent", "is configVersion v0 syntax; write kubernetes bindings instead (kubernetes: [{kind: ..., executeHookOnEvent: [...]}])")
	}

	if n, ok := o.integer("onStartup"); ok {
		cfg.OnStartup = &n
	}
	var refs []snapshotRef
	cfg.Kubernetes = c.kubernetesBindings(o, &refs)
	cfg.Schedule = c.scheduleBindings(o, &refs)
	cfg.Validating = c.webhookBindings(o, "kubernetesValidating", &refs)
	cfg.Mutating = c.webhookBindings(o, "kubernetesMutating", &refs)
	cfg.Conversion = c.conversionBindings(o, &refs)
	cfg.Settings = c.settings(o.object("settings"))
	if cfg.Settings.Parallelism > 1 {
		for i, b := range cfg.Kubernetes {
			if b.Group != "" {
				c.errorf(join(index("kubernetes", i), "group"), "cannot be used with settings.parallelism %d: runs in parallel are for one object each, and Group contexts do not say which object changed; remove group, or parallelism", cfg.Settings.Parallelism)
			}
		}
	}
	cfg.Writes = c.writes(o)
	o.finish()

	c.checkSnapshotRefs(cfg.Kubernetes, refs)
	return cfg
}

// checkSnapshotRefs reports includeSnapshotsFrom names that are not
// kubernetes bindings of the hook: snapshots are kept per kubernetes binding.
func (c *checker) checkSnapshotRefs(kube []KubernetesBinding, refs []snapshotRef) {
	var names []string
	for _, b := range kube {
		if !slices.Contains(names, b.Name) {
			names = append(names, b.Name)
		}
	}
	for _, r := range refs {
		for i, n := range r.names {
			if slices.Contains(names, n) {
				continue
			}
			if len(names) == 0 {
				c.errorf(index(r.path, i), "%q: this hook has no kubernetes bindings to take snapshots from; remove includeSnapshotsFrom or add a kubernetes binding named %q", n, n)
				continue
			}
			c.errorf(index(r.path, i), "%q is not the name of a kubernetes binding of this hook; use one of: %s", n, quoteAll(names))
		}
	}
}

func quoteAll(list []string) string {
	var b bytes.Buffer
	for i, s := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", s)
	}
	return b.String()
}

func (c *checker) settings(s *object) Settings {
	var st Settings
	if s == nil {
		return st
	}
	interval, hasInterval := s.duration("executionMinInterval")
	st.ExecutionMinInterval = interval
	burst, hasBurst := s.integer("executionBurst")
	switch {
	case hasBurst && burst < 0:
		c.errorf(s.at("executionBurst"), "%d is negative; use 1 or more", burst)
	case hasBurst && burst == 0 && hasInterval && interval > 0:
		c.errorf(s.at("executionBurst"), "0 with executionMinInterval would never let the hook run; use 1 or more, or remove it for the default 1")
	case !hasBurst && hasInterval && interval > 0:
		burst = 1
	}
	st.ExecutionBurst = burst
	if t, ok := s.duration("timeout"); ok {
		if t == 0 {
			c.errorf(s.at("timeout"), "must be longer than 0; remove it to use the operator's --hook-timeout")
		}
		st.Timeout = t
	}
	if n, ok := s.integer("parallelism"); ok {
		if n < 1 {
			c.errorf(s.at("parallelism"), "%d: use 1 (one run at a time, the default) or more", n)
		} else {
			st.Parallelism = n
		}
	}
	st.Sharded = s.boolean("sharded", false)
	st.StaleAfter = c.staleAfter(s)
	c.resident(s, &st)
	s.finish()
	return st
}

// staleAfter reads the staleAfter of settings or of a kubernetes binding
// (extension): at least MinStaleAfter.
func (c *checker) staleAfter(o *object) time.Duration {
	d, ok := o.duration("staleAfter")
	if !ok {
		return 0
	}
	if d < MinStaleAfter {
		c.errorf(o.at("staleAfter"), "%s: use at least %s, or remove it for the operator's --watch-idle-timeout (3m by default); the API server sends a bookmark about every minute, so a few minutes is usual", d, MinStaleAfter)
		return 0
	}
	return d
}

// resident reads resident and its limits into st, with their defaults when
// the hook is resident; limits without resident: true are errors, since they
// would silently do nothing.
func (c *checker) resident(s *object, st *Settings) {
	st.Resident = s.boolean("resident", false)
	runs, hasRuns := s.integer("residentMaxRuns")
	mem, hasMem := s.size("residentMaxMemory")
	for _, key := range []string{"residentMaxRuns", "residentMaxMemory"} {
		if !st.Resident && s.has(key) {
			c.errorf(s.at(key), "has no effect without resident: true; set settings.resident: true, or remove %s", key)
		}
	}
	switch {
	case hasRuns && runs < 1:
		c.errorf(s.at("residentMaxRuns"), "%d: use 1 or more (runs before the process is replaced), or remove it for the default %d", runs, DefaultResidentMaxRuns)
	case hasRuns:
		st.ResidentMaxRuns = runs
	case st.Resident:
		st.ResidentMaxRuns = DefaultResidentMaxRuns
	}
	switch {
	case hasMem && mem < MinResidentMaxMemory:
		c.errorf(s.at("residentMaxMemory"), "%s: use at least 1Mi, or remove it for the default 128Mi; no process is smaller, so it would be replaced after every run", limit.Size(mem))
	case hasMem:
		st.ResidentMaxMemory = mem
	case st.Resident:
		st.ResidentMaxMemory = DefaultResidentMaxMemory
	}
}
