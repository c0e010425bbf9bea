package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Hooks is what the Server asks about the hooks: their bindings at start
// and after each change, and, per request, an answer from the hook bound
// now. The operator implements it; a reload of the hooks folder replaces
// what it answers.
type Hooks interface {
	// WebhookBindings returns the admission and conversion bindings of
	// the current hooks; an error when they cannot be served as they are.
	WebhookBindings() (Bindings, error)
	// WebhooksChanged returns a channel that is closed at the next change
	// of the bindings WebhookBindings returns.
	WebhooksChanged() <-chan struct{}
	// Admit runs the hook of the admission binding served at path now
	// with review and returns its answer and the binding that gave it; an
	// error matching ErrNotServed when no binding is served at path. Other
	// errors deny the request with their text.
	Admit(ctx context.Context, path string, review json.RawMessage) (*AdmissionResponse, Admission, error)
	// Convert brings the objects of req, of CRD crd, to the desired
	// version with the current hooks' conversions; an error matching
	// ErrNotServed when no hook converts crd.
	Convert(ctx context.Context, crd string, req ConversionRequest) ([]json.RawMessage, error)
}

// ErrNotServed matches (errors.Is) the errors of Hooks about a path or
// CRD that no current binding serves; NotServed makes one.
var ErrNotServed = errors.New("not served")

// NotServed returns an error that says why a path or CRD is not served
// and matches ErrNotServed.
func NotServed(format string, args ...any) error {
	return notServed(fmt.Sprintf(format, args...))
}

type notServed string

func (e notServed) Error() string        { return string(e) }
func (e notServed) Is(target error) bool { return target == ErrNotServed }

// Bindings are the admission and conversion bindings of a hook set.
type Bindings struct {
	// Validating and Mutating are in the order of the hooks and of their
	// bindings.
	Validating, Mutating []Admission
	Conversions          []Conversion
}

// Conversion is one kubernetesCustomResourceConversion binding.
type Conversion struct {
	Hook, Binding, CRD string
}

// CRDs returns the names of the CRDs the bindings convert, sorted.
func (b Bindings) CRDs() []string {
	var out []string
	for _, c := range b.Conversions {
		out = append(out, c.CRD)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// failRetry is how often a change that could not be served is tried
// again (a certificate that is not there yet, say).
const failRetry = 10 * time.Second

// Server serves the hooks' admission and conversion bindings, and keeps
// their registration in step with them: at start and after each change
// that Hooks reports, it starts the listeners the bindings need (once
// started, a listener runs until the end), applies the webhook
// configurations and the CRDs' spec.conversion, and deletes or gives back
// those of bindings that went away. Each request asks Hooks for the hook
// bound at that moment, so a request that runs while the bindings change
// gets the answer of the hook it started with.
type Server struct {
	o        Options
	hooks    Hooks
	log      logrus.FieldLogger
	tls13    bool
	slots    *Slots
	bodies   *Bodies
	separate bool
	conv     ConversionOptions
	started  chan struct{}
	// retry is how often a failed change is tried again (failRetry).
	retry time.Duration
	// now, sleep and startBackoff (first and largest wait) time the
	// attempts at start (syncAtStart); tests replace them.
	now          func() time.Time
	sleep        func(context.Context, time.Duration) error
	startBackoff [2]time.Duration

	// servedMu guards served: the admission paths and conversion paths
	// served since start. A request to one that no binding serves now
	// (its binding went, and the API server has not seen its
	// registration go yet) is answered as no binding were there.
	servedMu sync.Mutex
	served   map[string]bool

	// Owned by Start's goroutine.
	certs           *MemoryCert
	admissionUp     bool
	conversionUp    bool
	dryRunWritten   bool
	stopCRDRetry    context.CancelFunc
	unservedWarning string
	// admissionPort and conversionPort are the listeners' ports, once
	// they listen; targets where the last registration points, and
	// targetWarning what was last said of them.
	admissionPort, conversionPort int
	registered                    []target
	targetWarning                 string
}

// NewServer checks o and returns the Server of hooks' webhook bindings;
// it starts nothing (see Start).
func NewServer(o Options, hooks Hooks) (*Server, error) {
	s := &Server{o: o, hooks: hooks, log: o.Log, started: make(chan struct{}), retry: failRetry, served: map[string]bool{},
		now: time.Now, sleep: sleep, startBackoff: [2]time.Duration{startRetryFirst, startRetryMax}}
	if s.log == nil {
		s.log = logrus.StandardLogger()
	}
	if o.ListenAddress == "" {
		return s, nil
	}
	if o.MaxConnections < 1 {
		return nil, fmt.Errorf("--webhook-max-connections=%d: use 1 or more (the default is 256)", o.MaxConnections)
	}
	tls13, err := ParseTLSMinVersion(o.TLSMinVersion)
	if err != nil {
		return nil, fmt.Errorf("--webhook-tls-min-version=%w", err)
	}
	if !o.DryRun && o.FailurePolicy != "Fail" && o.FailurePolicy != "Ignore" {
		return nil, fmt.Errorf("--webhook-failure-policy=%s: use Fail or Ignore", o.FailurePolicy)
	}
	if o.HookMemory < 0 {
		return nil, fmt.Errorf("--webhook-hook-memory=%d: use 0 (not bounded) or more", o.HookMemory)
	}
	s.tls13, s.slots, s.bodies = tls13, NewSlots(o.MaxConcurrent, o.HookMemory), NewBodies(defaultBodyBytes)
	s.separate = o.Conversion.separate()
	s.conv = o.Conversion.withDefaults(o)
	return s, nil
}

// Started is closed once Start has served and registered the bindings of
// the hooks it found at start.
func (s *Server) Started() <-chan struct{} { return s.started }

// Start serves the bindings until ctx ends, following their changes, and
// then stops the listeners and deletes a dry run's configurations. The
// bindings found at start are tried again after transient errors (the API
// server out of reach, failing or overloaded) for up to
// Options.StartRetry, and Started stays open meanwhile; any other error,
// or one still there at the end, is returned. Later errors are logged and
// told to Options.Failed, and the change is tried again.
func (s *Server) Start(ctx context.Context) error {
	defer s.cleanup()
	var retry, recheck <-chan time.Time
	for first := true; ; first = false {
		changed := s.hooks.WebhooksChanged()
		var err error
		if first {
			err = s.syncAtStart(ctx, s.sync)
		} else {
			err = s.sync(ctx)
		}
		if first && ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if first {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			s.log.WithError(err).Error("the webhook bindings changed, and serving them failed; trying again at their next change and every " + s.retry.String())
			if s.o.Failed != nil {
				s.o.Failed(err)
			}
			retry = time.After(s.retry)
		} else {
			retry = nil
		}
		if first {
			close(s.started)
		}
		for {
			recheck = nil
			if err == nil && s.reportTargets(ctx, s.registered) {
				recheck = time.After(s.retry)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-changed:
			case <-retry:
			case <-recheck:
				continue
			}
			break
		}
	}
}

// sync serves and registers the hooks' bindings as they are now.
func (s *Server) sync(ctx context.Context) error {
	b, err := s.hooks.WebhookBindings()
	if err != nil {
		return err
	}
	crds := b.CRDs()
	admissionServed, conversionServed := s.o.ListenAddress != "", s.o.ListenAddress != "" && !s.o.DryRun
	s.warnUnserved(b, admissionServed, conversionServed)
	admission := len(b.Validating)+len(b.Mutating) > 0
	conversion := len(crds) > 0 && conversionServed
	if s.o.ListenAddress == "" {
		return nil
	}
	s.remember(b)
	if s.o.SelfSigned && s.certs == nil && (admission || len(crds) > 0) {
		if err := s.selfSigned(ctx); err != nil {
			return err
		}
	}
	if err := s.listen(ctx, b, admission, conversion); err != nil {
		return err
	}
	s.registered = nil
	switch {
	case !s.o.Register:
		return nil
	case s.o.DryRun:
		if err := s.registerDryRun(ctx, b, admission); err != nil {
			return err
		}
		s.registered = s.targets(admission, false)
		return nil
	}
	if err := s.register(ctx, b, admission, conversion); err != nil {
		return err
	}
	s.registered = s.targets(admission, conversion)
	return nil
}

// remember adds the paths b serves to those served since start.
func (s *Server) remember(b Bindings) {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	for _, a := range slices.Concat(b.Validating, b.Mutating) {
		s.served[Path(a.Binding.Name)] = true
	}
	for _, c := range b.Conversions {
		s.served[ConversionPath(c.CRD)] = true
	}
}

// servedBefore reports whether path was served since start.
func (s *Server) servedBefore(path string) bool {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	return s.served[path]
}

// serves reports whether a request to path reaches a handler: a path of
// admission (under /hooks/) or of conversion, as the listener serves
// them, served since start or by a binding of the current hooks (one a
// reload added a moment ago). The others are answered 404 by the gate,
// counted and logged sampled, whatever their number.
func (s *Server) serves(admission, conversion bool) func(path string) bool {
	return func(path string) bool {
		isAdmission := strings.HasPrefix(path, "/hooks/")
		if isAdmission && !admission || !isAdmission && !conversion {
			return false
		}
		if s.servedBefore(path) {
			return true
		}
		b, err := s.hooks.WebhookBindings()
		if err != nil {
			return false
		}
		for _, a := range slices.Concat(b.Validating, b.Mutating) {
			if Path(a.Binding.Name) == path {
				return true
			}
		}
		for _, c := range b.Conversions {
			if ConversionPath(c.CRD) == path {
				return true
			}
		}
		return false
	}
}

// warnUnserved says plainly which bindings will not run, instead of
// ignoring them silently, once for each change of what it says.
func (s *Server) warnUnserved(b Bindings, admission, conversion bool) {
	type count struct{ admission, conversion int }
	var order []string
	counts := map[string]*count{}
	at := func(hook string) *count {
		if counts[hook] == nil {
			counts[hook] = &count{}
			order = append(order, hook)
		}
		return counts[hook]
	}
	if !admission {
		for _, a := range slices.Concat(b.Validating, b.Mutating) {
			at(a.Hook).admission++
		}
	}
	if !conversion {
		for _, c := range b.Conversions {
			at(c.Hook).conversion++
		}
	}
	var warning string
	for _, h := range order {
		warning += fmt.Sprintf("%s %d %d;", h, counts[h].admission, counts[h].conversion)
	}
	if warning == s.unservedWarning {
		return
	}
	s.unservedWarning = warning
	if s.o.DryRun && s.o.ListenAddress != "" && len(b.Conversions) > 0 {
		s.log.Warn("dry-run: conversion bindings are not served (a conversion cannot be allowed without being made); the CRDs keep their conversion")
	}
	for _, h := range order {
		c, log := counts[h], s.log.WithField("hook", h)
		if c.conversion > 0 {
			log.Warnf("the hook has %d conversion binding(s), and the webhook server does not serve them (--webhook-listen-address is empty, or dry-run), so they will not run", c.conversion)
		}
		if c.admission > 0 {
			log.Warnf("the hook has %d admission binding(s), and the webhook server does not serve them (--webhook-listen-address is empty, or dry-run), so they will not run", c.admission)
		}
	}
}
