package main

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The scenarios, in the order they run.
var allScenarios = []string{"idle", "sync", "trickle", "burst", "admission", "failover", "parallel", "sharded", "scale"}

// The hook kinds: the bash hook (bench/hooks/bash) and the Go hook
// (bench/hooks/go), run once per run, and their resident variants
// (settings.resident: true; the Go hook's own loop, bash's resident.sh).
const (
	bashHook         = "bash"
	goHook           = "go"
	goResidentHook   = "go-resident"
	bashResidentHook = "bash-resident"
)

// allHooks are the hook kinds in the order --hook all runs them.
var allHooks = []string{bashHook, goHook, goResidentHook, bashResidentHook}

// residentHook reports whether kind is a resident variant.
func residentHook(kind string) bool { return kind == goResidentHook || kind == bashResidentHook }

// oneShot is the hook kind a resident variant is the resident form of
// (kind itself for the others): shell-operator, which knows no residency,
// runs it in the resident variant's place, and ratios compare with it.
func oneShot(kind string) string {
	switch kind {
	case goResidentHook:
		return goHook
	case bashResidentHook:
		return bashHook
	}
	return kind
}

// Config is what one harness run measures.
type Config struct {
	Scenarios []string `json:"scenarios"`
	// Hooks are the hook kinds every scenario but scale runs with; scale
	// runs with the first only (it measures the runtime's cost per object).
	Hooks  []string `json:"hooks"`
	Repeat int      `json:"repeat"`
	// SyncObjects is how many ConfigMaps the sync scenario watches.
	SyncObjects int `json:"sync_objects"`
	// BurstObjects is how many ConfigMaps the burst scenario creates.
	BurstObjects int `json:"burst_objects"`
	// BurstWorkers is how many goroutines create them.
	BurstWorkers int `json:"burst_workers"`
	// BurstRate, when above zero, paces the burst's creates at that many
	// a second; zero creates them as fast as the API server takes them.
	BurstRate int `json:"burst_rate,omitempty"`
	// TrickleRate objects per second are created for TrickleFor.
	TrickleRate int           `json:"trickle_rate"`
	TrickleFor  time.Duration `json:"trickle_for_ns"`
	// AdmissionRequests is how many admission requests the admission
	// scenario sends one at a time (and twice as many concurrently).
	AdmissionRequests int `json:"admission_requests"`
	// FailoverObjects is how many ConfigMaps the failover scenario's
	// operators watch; FailoverHandovers how many handovers it times after
	// SIGTERM, and as many after SIGKILL.
	FailoverObjects   int `json:"failover_objects"`
	FailoverHandovers int `json:"failover_handovers"`
	// ParallelObjects is how many ConfigMaps the parallel scenario's sleep
	// variants create (a quarter of them for spin).
	ParallelObjects int `json:"parallel_objects"`
	// ScaleSizes are the object counts of the growth curve, ascending.
	ScaleSizes []int `json:"scale_sizes"`
	// ScaleNamespace, when set, is the scale scenario's namespace, kept
	// between runs with its ConfigMaps (--scale-namespace).
	ScaleNamespace string `json:"scale_namespace,omitempty"`
	// Settle is how long after the Synchronization run memory is read again.
	Settle time.Duration `json:"settle_ns"`
	Quick  bool          `json:"quick"`
	// Profile adds a profiled run 0 to every scenario variant (see
	// profiling).
	Profile bool `json:"profile"`

	// HookTmpDir is the operator's --tmp-dir, where each hook run gets its
	// files; "" is a folder under the system temp dir.
	HookTmpDir string `json:"hook_tmp_dir,omitempty"`

	// Reference is the shell-operator binary measured beside ours:
	// "pinned" (hack/tools/shell-operator.sh), a path, or "none". Its
	// default is $HOOK_OPERATOR_REFERENCE_BIN when that is set.
	Reference string `json:"reference"`

	Out        string `json:"-"`
	Binary     string `json:"-"`
	Kubeconfig string `json:"-"`
}

// Full reports whether c is a full run: every setting its default but where
// the results and the cluster are (--out, --kubeconfig) and the extra
// profiled runs (--profile), which leave the measured runs as they are.
// Only a full run's report becomes latest.json and latest.md.
func (c *Config) Full() bool {
	def, err := parseFlags(nil)
	if err != nil {
		return false
	}
	def.Out, def.Kubeconfig, def.Profile = c.Out, c.Kubeconfig, c.Profile
	// The report's ratios and targets are against the pinned reference: a
	// run beside another (HOOK_OPERATOR_REFERENCE_BIN) is not a full run.
	return c.Reference == "pinned" && reflect.DeepEqual(c, def)
}

// referenceEnv names a shell-operator binary to measure beside ours in
// place of the pinned one (hack/tools/shell-operator-src.sh builds one); the
// conformance suite reads the same variable.
const referenceEnv = "HOOK_OPERATOR_REFERENCE_BIN"

// defaultReference is --reference's default: $HOOK_OPERATOR_REFERENCE_BIN,
// or the pinned shell-operator.
func defaultReference() string {
	if p := os.Getenv(referenceEnv); p != "" {
		return p
	}
	return "pinned"
}

// parseFlags reads the command line into a Config.
func parseFlags(args []string) (*Config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	scenarios := fs.String("scenarios", strings.Join(allScenarios, ","), "scenarios to run, comma-separated: "+strings.Join(allScenarios, ","))
	hooks := fs.String("hook", "both", "hooks, comma-separated: bash, go, go-resident, bash-resident; both (bash,go) or all")
	repeat := fs.Int("repeat", 3, "runs of each scenario; medians are reported")
	sizes := fs.String("scale-sizes", "1000,10000,100000,300000", "object counts of the scale scenario's growth curve")
	scaleNS := fs.String("scale-namespace", "", "keep the scale scenario's ConfigMaps in this namespace for later runs (made if missing, never deleted)")
	syncObjects := fs.Int("sync-objects", 12000, "ConfigMaps the sync scenario watches")
	burstObjects := fs.Int("burst-objects", 3000, "ConfigMaps the burst scenario creates")
	burstRate := fs.Int("burst-rate", 0, "creates per second of the burst scenario (0: as fast as the API server takes them); builds compared at one rate see the same arrivals")
	failoverObjects := fs.Int("failover-objects", 1000, "ConfigMaps the failover scenario's operators watch")
	handovers := fs.Int("failover-handovers", 5, "handovers the failover scenario times after SIGTERM, and as many after SIGKILL; medians are reported")
	parallelObjects := fs.Int("parallel-objects", 2000, "ConfigMaps the parallel scenario creates for its sleeping hook (a quarter of them for its spinning one)")
	quick := fs.Bool("quick", false, "small sizes for development: sync 1000, burst 300, scale 1000, trickle 3 s, settle 2 s, 1 run, 2 handovers, parallel 200 (explicit flags win)")
	profile := fs.Bool("profile", false, "add one profiled run per scenario and hook (not in the medians): pprof CPU and heap profiles in <out>/profiles-<time>/")
	hookTmpDir := fs.String("hook-tmp-dir", "", "the operator's --tmp-dir for the hooks' per-run files (default: under the system temp dir); e.g. /dev/shm to compare with a tmpfs")
	out := fs.String("out", "bench/results", "folder for the results")
	binary := fs.String("binary", "bin/hook-operator", "the operator binary (make build)")
	ref := fs.String("reference", defaultReference(), "the shell-operator binary measured beside ours in the same session: pinned (built once from hack/tools/shell-operator), a path, or none; the default is $"+referenceEnv+" when set, else pinned")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster to use (default: the local cluster of hack/cluster/up.sh)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q; every setting is a flag", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	c := &Config{
		Repeat:            *repeat,
		SyncObjects:       *syncObjects,
		BurstObjects:      *burstObjects,
		BurstWorkers:      8,
		BurstRate:         *burstRate,
		AdmissionRequests: 1000,
		FailoverObjects:   *failoverObjects,
		FailoverHandovers: *handovers,
		ParallelObjects:   *parallelObjects,
		TrickleRate:       30,
		TrickleFor:        10 * time.Second,
		Settle:            5 * time.Second,
		Quick:             *quick,
		Profile:           *profile,
		HookTmpDir:        *hookTmpDir,
		ScaleNamespace:    *scaleNS,
		Out:               *out,
		Binary:            *binary,
		Reference:         *ref,
		Kubeconfig:        *kubeconfig,
	}
	var err error
	if c.Scenarios, err = parseScenarios(*scenarios); err != nil {
		return nil, err
	}
	if c.Hooks, err = parseHooks(*hooks); err != nil {
		return nil, err
	}
	if c.ScaleSizes, err = parseSizes(*sizes); err != nil {
		return nil, fmt.Errorf("--scale-sizes: %w", err)
	}
	if *quick {
		if !set["sync-objects"] {
			c.SyncObjects = 1000
		}
		if !set["burst-objects"] {
			c.BurstObjects = 300
		}
		c.AdmissionRequests = 100
		if !set["scale-sizes"] {
			c.ScaleSizes = []int{1000}
		}
		if !set["repeat"] {
			c.Repeat = 1
		}
		if !set["failover-handovers"] {
			c.FailoverHandovers = 2
		}
		if !set["parallel-objects"] {
			c.ParallelObjects = 200
		}
		c.TrickleFor = 3 * time.Second
		c.Settle = 2 * time.Second
	}
	if c.Repeat < 1 || c.SyncObjects < 1 || c.BurstObjects < 1 || c.FailoverObjects < 1 || c.FailoverHandovers < 1 || c.ParallelObjects < 1 {
		return nil, fmt.Errorf("--repeat, --sync-objects, --burst-objects, --failover-objects, --failover-handovers and --parallel-objects must be at least 1")
	}
	if c.BurstRate < 0 {
		return nil, fmt.Errorf("--burst-rate=%d: use 0 (as fast as the API server takes them) or a rate of creates per second", c.BurstRate)
	}
	return c, nil
}

// parseScenarios checks a comma-separated list of scenario names and
// returns them in the order they run.
func parseScenarios(s string) ([]string, error) {
	want := map[string]bool{}
	for _, name := range splitList(s) {
		if !slices.Contains(allScenarios, name) {
			return nil, fmt.Errorf("--scenarios: unknown scenario %q; the scenarios are %s", name, strings.Join(allScenarios, ","))
		}
		want[name] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("--scenarios: name at least one of %s", strings.Join(allScenarios, ","))
	}
	var out []string
	for _, name := range allScenarios {
		if want[name] {
			out = append(out, name)
		}
	}
	return out, nil
}

// parseHooks reads --hook: a comma-separated list of hook kinds, in the
// order given, or both (bash,go) or all.
func parseHooks(s string) ([]string, error) {
	switch strings.TrimSpace(s) {
	case "both":
		return []string{bashHook, goHook}, nil
	case "all":
		return slices.Clone(allHooks), nil
	}
	var out []string
	for _, kind := range splitList(s) {
		if !slices.Contains(allHooks, kind) {
			return nil, fmt.Errorf("--hook: unknown hook %q; name %s, both (bash,go) or all", kind, strings.Join(allHooks, ", "))
		}
		if !slices.Contains(out, kind) {
			out = append(out, kind)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--hook: name at least one of %s, or both or all", strings.Join(allHooks, ", "))
	}
	return out, nil
}

// parseSizes reads a comma-separated list of positive counts and returns
// them ascending, without duplicates.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no sizes given")
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
