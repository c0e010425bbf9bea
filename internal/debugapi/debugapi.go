// Package debugapi holds what travels over the operator's debug routes:
// the JSON that the live operator (internal/operator) serves through
// internal/server on the debug socket, and that `hook-operator debug` and
// `hook-operator trigger` (internal/cli/debug, internal/cli/trigger) read
// back. The operator fills these types; the server and the CLI only carry
// and print them, so neither imports the live operator.
//
// The JSON names are the format a user's scripts read (`debug hooks -o
// json`): a field may be added, never renamed or dropped. debugapi_test.go
// pins them. The queues' state (queue.QueueState) travels too, but it lives
// in internal/queue, which the CLI may import.
package debugapi

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
)

// EnvSocket sets the debug socket of both ends: where `start` serves the
// debug routes (--debug-socket) and where `debug` and `trigger` look for
// them (--socket).
var EnvSocket = envflag.EnvName("debug-socket")

// DefaultSocket is the debug socket when none is set, at both ends:
// hook-operator-debug.sock in the system temp dir.
func DefaultSocket() string { return filepath.Join(os.TempDir(), "hook-operator-debug.sock") }

// HookState describes one hook for the debug routes: its bindings and how
// its runs went.
type HookState struct {
	Name      string         `json:"name"`
	Bindings  []BindingState `json:"bindings"`
	Runs      int            `json:"runs"`
	Failures  int            `json:"failures"`
	LastRun   time.Time      `json:"lastRun,omitzero"`
	LastError string         `json:"lastError,omitempty"`
}

// BindingState describes one binding of a hook.
type BindingState struct {
	Name string `json:"name"`
	// Kind is "kubernetes", "schedule" or "onStartup".
	Kind string `json:"kind"`
	// Watches is what a kubernetes binding watches ("apps/v1, Resource=deployments").
	Watches string `json:"watches,omitempty"`
	// Objects is how many objects a kubernetes binding holds.
	Objects int `json:"objects"`
	// Synced says a kubernetes binding delivered its Synchronization.
	Synced bool `json:"synced"`
	// Phase is where a kubernetes binding is on its way to delivering
	// events (watch.Phase: resolving, unserved, listing, held, delivering,
	// synced).
	Phase string `json:"phase,omitempty"`
	// Waiting says why a kubernetes binding does not watch yet.
	Waiting string `json:"waiting,omitempty"`
	// HeldBy names the bindings a held kubernetes binding waits for (see
	// watch.Held), and Held says why, naming the binding whose kind is not
	// served when one holds it.
	HeldBy []string `json:"heldBy,omitempty"`
	Held   string   `json:"held,omitempty"`
	// Crontab is a schedule binding's crontab.
	Crontab string `json:"crontab,omitempty"`
	// ViewAgeSeconds is how long ago a watching kubernetes binding's view
	// was last known current (its latest event, bookmark or successful
	// list); StaleAfterSeconds is the age above which it is stale (absent:
	// never), and Stale says it is above. See watch.Watcher.Freshness.
	ViewAgeSeconds    *float64 `json:"viewAgeSeconds,omitempty"`
	StaleAfterSeconds float64  `json:"staleAfterSeconds,omitempty"`
	Stale             bool     `json:"stale,omitempty"`
}

// SnapshotState is the current snapshot of one kubernetes binding: its
// objects as the hook would see them (Secret data masked), each with its
// namespace and name added.
type SnapshotState struct {
	Binding string `json:"binding"`
	Objects []any  `json:"objects"`
}

// RoleState is the operator's part in leader election.
type RoleState struct {
	// Role is leader or standby with --leader-elect, single without.
	Role string `json:"role"`
	// Identity is this replica's name in the Lease; empty without
	// election.
	Identity string `json:"identity,omitempty"`
	// Ring is the sharding ring as this replica sees it (--sharding).
	Ring *RingMembers `json:"ring,omitempty"`
}

// RingMembers is the sharding ring as this replica sees it.
type RingMembers struct {
	// ShardBy is what an object's owner is chosen by: uid or namespace.
	ShardBy string `json:"shardBy"`
	// Members are the live members, sorted, with the fraction of the
	// hash space each owns.
	Members []RingMember `json:"members"`
}

// RingMember is one member of the ring.
type RingMember struct {
	Identity string  `json:"identity"`
	Share    float64 `json:"share"`
}

// TriggerRequest names what `hook-operator trigger` asks to run. It travels
// as the trigger route's query (?hook=&binding=&object=), not as JSON.
type TriggerRequest struct {
	// Hook is the hook's name. Binding names one of its kubernetes or
	// schedule bindings; it may be empty when the hook has exactly one.
	Hook, Binding string
	// Object, "namespace/name" (or "name" for a cluster-scoped kind), asks
	// for an Event of that object instead of the binding's
	// Synchronization; kubernetes bindings only.
	Object string
}

// TriggerAnswer says what was queued.
type TriggerAnswer struct {
	Hook    string `json:"hook"`
	Binding string `json:"binding"`
	// Type is the context's type: Synchronization, Event or Schedule.
	Type  string `json:"type"`
	Queue string `json:"queue"`
	// Objects is how many objects the Synchronization carries.
	Objects int `json:"objects"`
}

// StandbyError is the answer of a standby replica to a trigger: it runs no
// hooks. The trigger route answers it with 503 Service Unavailable, any
// other error with 409 Conflict.
type StandbyError struct {
	// Identity is this replica's; Leader the replica seen to lead, or ""
	// when none has been seen yet.
	Identity, Leader string
}

func (e *StandbyError) Error() string {
	leader := "no leader has been seen yet"
	if e.Leader != "" {
		leader = "the leader is " + e.Leader
	}
	return fmt.Sprintf("this replica (%s) is a standby and runs no hooks; %s: run trigger in the leader's Pod", e.Identity, leader)
}
