package hook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/limit"
)

// Defaults of LoadOptions.
const (
	// DefaultConfigTimeout bounds one `<hook> --config` run.
	DefaultConfigTimeout = 30 * time.Second
	// DefaultConfigParallelism is how many --config runs go on at once:
	// enough to overlap interpreter start-up, few enough not to swamp a
	// small container at start-up.
	DefaultConfigParallelism = 8
)

// LoadOptions tune Load. The zero value is ready to use.
type LoadOptions struct {
	// ConfigTimeout bounds each `<hook> --config` run; zero means
	// DefaultConfigTimeout.
	ConfigTimeout time.Duration
	// Parallelism is how many --config runs go on at once; zero means
	// DefaultConfigParallelism.
	Parallelism int
	// MaxConfigBytes is the most of a --config run's stdout that is read;
	// a hook that prints more fails to load. Zero means
	// limit.DefaultHookOutput.
	MaxConfigBytes int64
	// Env is the environment of the --config runs; nil means the
	// operator's own (os.Environ()).
	Env []string
	// Warn receives each discovery warning (a file skipped and why); nil
	// drops them.
	Warn func(msg string)
	// Disabled are hook names or globs of them (see CheckDisabled) whose
	// hooks are not loaded; their --config is not run.
	Disabled []string
	// Skip receives, in name order, each entry that is not loaded as a
	// hook on purpose: ignored by .hookignore, disabled, or configured
	// with no bindings. nil drops them.
	Skip func(Skipped)
	// Folder says what may lead out of the hooks folder; the zero value
	// follows only symlinks that resolve inside it.
	Folder FolderOptions
}

// Load finds the hooks under dir (see Discover), leaves out those that
// opts.Disabled names, runs each other one as `<hook> --config` from its
// own folder, a few at a time, and validates every configuration (see
// ParseConfig). A hook whose configuration has no bindings is left out
// too. It returns the hooks sorted by Name; opts.Skip hears of every entry
// left out, after the load succeeded.
//
// When any hook cannot be run or has an invalid configuration, Load returns
// no hooks and ConfigErrors listing every problem of every hook. A dir that
// cannot be read, or ctx ending, is a plain error.
func Load(ctx context.Context, dir string, opts LoadOptions) ([]*Hook, error) {
	found, skipped, warnings, err := Discover(dir, opts.Folder)
	if err != nil {
		return nil, err
	}
	if err := CheckDisabled(opts.Disabled); err != nil {
		return nil, err
	}
	var names []string
	for _, name := range found {
		if p := disabledBy(opts.Disabled, name); p != "" {
			skipped = append(skipped, Skipped{Name: name, Reason: fmt.Sprintf("%s by --disabled-hooks (%s)", ReasonDisabled, p)})
			continue
		}
		names = append(names, name)
	}
	if opts.Warn != nil {
		for _, w := range warnings {
			opts.Warn(w)
		}
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("hooks folder %q: %w", dir, err)
	}
	if opts.ConfigTimeout <= 0 {
		opts.ConfigTimeout = DefaultConfigTimeout
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = DefaultConfigParallelism
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	if opts.MaxConfigBytes <= 0 {
		opts.MaxConfigBytes = limit.DefaultHookOutput
	}

	hooks := make([]*Hook, len(names))
	errs := make([]ConfigErrors, len(names))
	// One index of the built-in kinds for the whole load, built when a
	// hook first needs it and let go with the load.
	builtin := sync.OnceValue(kube.NewBuiltinKinds)
	slots := make(chan struct{}, opts.Parallelism)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			hooks[i], errs[i] = loadHook(ctx, root, name, opts, builtin)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var all ConfigErrors
	for _, e := range errs {
		all = append(all, e...)
	}
	if len(all) > 0 {
		return nil, all
	}
	loaded := hooks[:0]
	for _, h := range hooks {
		if hasBindings(&h.Config) {
			loaded = append(loaded, h)
			continue
		}
		skipped = append(skipped, Skipped{Name: h.Name,
			Reason: ReasonNoBindings + ": its --config prints no onStartup, schedule, kubernetes or webhook binding, so it would never run"})
	}
	sort.Slice(loaded, func(i, j int) bool { return loaded[i].Name < loaded[j].Name })
	sort.Slice(skipped, func(i, j int) bool { return skipped[i].Name < skipped[j].Name })
	if opts.Skip != nil {
		for _, s := range skipped {
			opts.Skip(s)
		}
	}
	return loaded, nil
}

// loadHook runs one hook's --config and parses its output.
func loadHook(ctx context.Context, root, name string, opts LoadOptions, builtin func() *kube.BuiltinKinds) (*Hook, ConfigErrors) {
	p := filepath.Join(root, filepath.FromSlash(name))
	h := &Hook{Name: name, Path: p, Dir: filepath.Dir(p), folder: folder{dir: root, opts: opts.Folder}}
	if ctx.Err() != nil {
		return nil, nil
	}
	out, err := runConfig(ctx, h.Path, h.Dir, opts.Env, opts.ConfigTimeout, opts.MaxConfigBytes)
	if err != nil {
		return nil, ConfigErrors{{Hook: name, Reason: err.Error()}}
	}
	cfg, err := ParseConfig(name, out)
	if err != nil {
		var errs ConfigErrors
		if errors.As(err, &errs) {
			return nil, errs
		}
		return nil, ConfigErrors{{Hook: name, Reason: err.Error()}}
	}
	if errs := checkKinds(builtin, name, cfg); len(errs) > 0 {
		return nil, errs
	}
	h.Config = cfg
	return h, nil
}
