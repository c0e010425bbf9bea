package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hook-operator/hook-operator/internal/debugapi"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/redact"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// runStats counts the runs of each hook.
type runStats struct {
	mu    sync.Mutex
	hooks map[string]*debugapi.HookState
}

func (s *runStats) record(hook string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hooks == nil {
		s.hooks = map[string]*debugapi.HookState{}
	}
	st := s.hooks[hook]
	if st == nil {
		st = &debugapi.HookState{}
		s.hooks[hook] = st
	}
	st.Runs++
	st.LastRun = time.Now()
	st.LastError = ""
	if err != nil {
		st.Failures++
		st.LastError = err.Error()
	}
}

// Queues describes every queue.
func (o *Operator) Queues() []queue.QueueState { return o.queues.State() }

// Role reports the operator's part in leader election.
func (o *Operator) Role() debugapi.RoleState {
	st := debugapi.RoleState{Role: "single"}
	if o.opts.Leading != nil {
		st = debugapi.RoleState{Role: "leader", Identity: o.opts.Identity}
		if o.standby() {
			st.Role = "standby"
		}
	}
	if sh := o.opts.Sharding; sh != nil {
		st.Ring = sh.describe()
	}
	return st
}

// describe is the ring as debugapi.RoleState shows it.
func (s *Sharding) describe() *debugapi.RingMembers {
	r := s.Members.Ring()
	out := &debugapi.RingMembers{ShardBy: s.By, Members: []debugapi.RingMember{}}
	for _, id := range r.Members() {
		out.Members = append(out.Members, debugapi.RingMember{Identity: id, Share: r.Share(id)})
	}
	return out
}

// Hooks describes every hook, sorted by name.
func (o *Operator) Hooks() []debugapi.HookState {
	out := make([]debugapi.HookState, 0, len(o.current()))
	for _, h := range o.current() {
		st := debugapi.HookState{Name: h.Name, Bindings: []debugapi.BindingState{}}
		o.stats.mu.Lock()
		if s := o.stats.hooks[h.Name]; s != nil {
			st.Runs, st.Failures, st.LastRun, st.LastError = s.Runs, s.Failures, s.LastRun, s.LastError
		}
		o.stats.mu.Unlock()
		if h.Config.OnStartup != nil {
			st.Bindings = append(st.Bindings, debugapi.BindingState{Name: "onStartup", Kind: "onStartup"})
		}
		for _, b := range o.watcher.Bindings() {
			if b.Hook.Name != h.Name {
				continue
			}
			p := b.Phase()
			bs := debugapi.BindingState{Name: b.Name(), Kind: "kubernetes", Synced: p == watch.Synced, Phase: p.String(), Waiting: b.Waiting()}
			bs.HeldBy, _ = b.HeldBy()
			bs.Held = heldWhy(o.watcher, b)
			if bs.Waiting == "" {
				bs.Watches = b.Resource().GVR.String()
				bs.Objects = b.Count()
			}
			if age, after, ok := o.watcher.Freshness(b); ok {
				secs := age.Seconds()
				bs.ViewAgeSeconds, bs.StaleAfterSeconds, bs.Stale = &secs, after.Seconds(), after > 0 && age > after
			}
			st.Bindings = append(st.Bindings, bs)
		}
		for _, s := range h.Config.Schedule {
			st.Bindings = append(st.Bindings, debugapi.BindingState{Name: s.Name, Kind: "schedule", Crontab: s.Crontab})
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Snapshots returns the snapshots of the kubernetes bindings of hook.
func (o *Operator) Snapshots(hook string) ([]debugapi.SnapshotState, error) {
	if o.hook(hook) == nil {
		return nil, fmt.Errorf("no hook %q (hook-operator debug hooks lists them)", hook)
	}
	out := []debugapi.SnapshotState{}
	for _, b := range o.watcher.Bindings() {
		if b.Hook.Name != hook {
			continue
		}
		objs := b.Snapshot()
		data, err := json.Marshal(objs)
		if err != nil {
			return nil, err
		}
		var decoded []any
		if err := json.Unmarshal(data, &decoded); err != nil {
			return nil, err
		}
		// Name every object, also those kept as their filter result alone.
		for i, d := range decoded {
			if m, ok := d.(map[string]any); ok {
				m["namespace"], m["name"] = objs[i].Namespace, objs[i].Name
			}
		}
		k := b.Resource().GVK
		out = append(out, debugapi.SnapshotState{Binding: b.Name(), Objects: redactObjects(b.Name(), decoded, k.Group == "" && k.Kind == "Secret")})
	}
	return out, nil
}

// Ready reports whether the operator is ready: start-up is done, every
// binding whose kind is served has delivered its Synchronization, the API
// server answers, and no watch is broken. It names what is missing.
//
// The API server is asked directly because client-go's watches retry an
// unreachable server quietly: they report no error while it is down.
func (o *Operator) Ready(ctx context.Context) (bool, []string) {
	var why []string
	if o.apiReady != nil {
		if err := o.apiReady(ctx); err != nil {
			why = append(why, "the API server does not answer: "+err.Error())
		}
	}
	if p := o.misdirected.Load(); p != nil {
		for _, msg := range *p {
			why = append(why, "webhook registration: "+msg)
		}
	}
	if o.idle() {
		// A healthy standby is ready: it serves webhooks, and a rolling
		// update must be able to go on while another replica leads.
		return len(why) == 0, why
	}
	if ok, waiting := o.watcher.Synced(); !ok {
		for _, name := range waiting {
			msg := "binding " + name + " has not synchronized"
			hookName, bindingName, _ := strings.Cut(name, "/")
			if b := o.watcher.Binding(hookName, bindingName); b != nil {
				if held := heldWhy(o.watcher, b); held != "" {
					msg += ": " + held
				}
			}
			why = append(why, msg)
		}
	}
	for _, b := range o.watcher.Bindings() {
		if msg := b.KindMissing(); msg != "" {
			why = append(why, "binding "+b.Hook.Name+"/"+b.Name()+" waits for a kind its group/version does not serve: "+msg)
		}
	}
	for _, w := range o.watcher.Broken(ctx) {
		why = append(why, "watch broken: "+w)
	}
	if !o.started.Load() {
		holds := o.startupHolds()
		if len(holds) == 0 {
			why = append(why, "starting: onStartup hooks and Synchronization runs are not done")
		}
		for _, h := range holds {
			why = append(why, "starting: waits for "+h)
		}
	}
	return len(why) == 0, why
}

// Alive reports an error when the operator's loops stopped ticking: the
// liveness loop, which also takes the queues' lock, has not ticked for a
// while.
func (o *Operator) Alive() error {
	if o.idle() {
		return nil
	}
	last := time.Unix(0, o.lastTick.Load())
	if d := time.Since(last); d > livenessTimeout {
		return fmt.Errorf("the operator's loops have not ticked for %s", d.Round(time.Second))
	}
	return nil
}

// idle reports whether the operator runs no hook at all: a standby of
// leader election without sharding (with sharding a standby runs the
// sharded hooks, and is ready and alive as any operator running hooks).
func (o *Operator) idle() bool { return o.standby() && o.opts.Sharding == nil }

// livenessTimeout is how long the liveness loop may go without ticking.
const livenessTimeout = 30 * time.Second

// tick runs the liveness loop until ctx ends.
func (o *Operator) tick(ctx context.Context) {
	o.lastTick.Store(time.Now().UnixNano())
	t := time.NewTicker(time.Second)
	defer t.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_ = o.queues.State() // the queues' lock is free: their loops are not stuck
		o.lastTick.Store(time.Now().UnixNano())
		if n++; n%10 == 0 {
			o.opts.Metrics.Tick()
		}
	}
}

// redactObjects masks Secret data in a binding's objects; secrets says the
// binding watches Secrets, so its filter results are masked too.
func redactObjects(bindingName string, objects []any, secrets bool) []any {
	// As a Synchronization context, the objects get the masking contexts get.
	c := map[string]any{"binding": bindingName, "objects": objects}
	masked, _ := redact.Context(c, map[string]bool{bindingName: secrets}).(map[string]any)
	out, _ := masked["objects"].([]any)
	if out == nil {
		out = []any{}
	}
	return out
}
