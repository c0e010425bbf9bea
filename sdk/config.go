package sdk

import (
	"encoding/json"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConfigVersion is the configuration format this package writes. It is
// always printed, so a Config never has to set it.
const ConfigVersion = "v1"

// Event types of kubernetes bindings, as ExecuteHookOnEvent lists them and
// as BindingContext.WatchEvent carries them. EventFinalize and EventRequeue
// are extensions: they are delivered to bindings with a finalizer, and for
// Requeue operations, whatever ExecuteHookOnEvent says.
const (
	EventAdded    = "Added"
	EventModified = "Modified"
	EventDeleted  = "Deleted"
	EventFinalize = "Finalize"
	EventRequeue  = "Requeue"
)

// Config is a hook's configuration: what `<hook> --config` prints. Its
// fields mirror the top-level keys of configVersion v1 (docs/bindings.md,
// "Discovery and configuration"); a field left at its zero value is left out
// of the printed configuration, so the runtime's default applies.
//
// The runtime validates the configuration when it starts, with every
// problem named by field path. `hook-operator hooks list --hooks-dir DIR`
// checks a folder of built hooks the same way, without a cluster.
type Config struct {
	// OnStartup, when not nil, runs the hook once at start-up; the number
	// orders the onStartup hooks. Ptr(10) makes one.
	OnStartup *int `json:"onStartup,omitempty"`
	// Schedule runs the hook on crontabs.
	Schedule []ScheduleBinding `json:"schedule,omitempty"`
	// Kubernetes runs the hook when watched objects change.
	Kubernetes []KubernetesBinding `json:"kubernetes,omitempty"`
	// Settings are hook-wide; nil leaves every default.
	Settings *Settings `json:"settings,omitempty"`
	// Writes (extension) declares what the hook's operations write, so that
	// `hook-operator rbac` grants exactly that.
	Writes []Write `json:"writes,omitempty"`
}

// Write declares one kind of write of the hook's operations (extension):
// verbs on a kind (or one of its subresources), in some namespaces or all.
// docs/bindings.md lists the verbs each operation needs.
type Write struct {
	APIVersion  string   `json:"apiVersion,omitempty"`
	Kind        string   `json:"kind"`
	Subresource string   `json:"subresource,omitempty"`
	Verbs       []string `json:"verbs"`
	Namespaces  []string `json:"namespaces,omitempty"`
}

// MarshalJSON writes the configuration with configVersion v1 first.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config // without this method
	return json.Marshal(struct {
		ConfigVersion string `json:"configVersion"`
		plain
	}{ConfigVersion, plain(c)})
}

// ScheduleBinding runs the hook on a crontab.
type ScheduleBinding struct {
	// Name is the binding's name in binding contexts; empty means
	// "schedule". Schedule bindings may share a name.
	Name string `json:"name,omitempty"`
	// Crontab is required: 5 fields (minute hour day-of-month month
	// day-of-week), 6 with seconds first, or a descriptor such as
	// "@every 1m30s".
	Crontab string `json:"crontab"`
	// AllowFailure makes a failed run logged and dropped instead of retried.
	AllowFailure bool `json:"allowFailure,omitempty"`
	// Queue is the queue the runs go to; empty means "main".
	Queue string `json:"queue,omitempty"`
	// Group makes the binding deliver Group contexts with the snapshots of
	// every kubernetes binding of the same group.
	Group string `json:"group,omitempty"`
	// IncludeSnapshotsFrom names kubernetes bindings of this hook whose
	// current objects the context carries under Snapshots.
	IncludeSnapshotsFrom []string `json:"includeSnapshotsFrom,omitempty"`
}

// KubernetesBinding runs the hook when objects of a kind change. Only Kind
// is required.
type KubernetesBinding struct {
	// Name is the binding's name in binding contexts and snapshots; empty
	// means "kubernetes". It must be unique among the hook's kubernetes
	// bindings.
	Name string `json:"name,omitempty"`
	// APIVersion is "group/version" ("apps/v1"), or "v1" for the core
	// group; empty means the kind's preferred version.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind is the kind, plural or short name, in any case.
	Kind string `json:"kind"`

	// ExecuteHookOnEvent lists the event types that run the hook. nil means
	// all of them (Added, Modified, Deleted); OnEvents() with no arguments
	// means none: the binding only feeds snapshots.
	ExecuteHookOnEvent *Events `json:"executeHookOnEvent,omitempty"`
	// ExecuteHookOnSynchronization: nil means true. Ptr(false) skips the
	// Synchronization run (the objects still reach snapshots).
	ExecuteHookOnSynchronization *bool `json:"executeHookOnSynchronization,omitempty"`
	// WaitForSynchronization: nil means true. Ptr(false) is allowed only
	// together with a Queue other than "main".
	WaitForSynchronization *bool `json:"waitForSynchronization,omitempty"`
	// KeepFullObjectsInMemory: nil means true. Ptr(false) leaves the object
	// out of every context and snapshot, keeping only the filter result;
	// use it with a JQFilter.
	KeepFullObjectsInMemory *bool `json:"keepFullObjectsInMemory,omitempty"`

	// NameSelector watches only objects with these names.
	NameSelector *NameSelector `json:"nameSelector,omitempty"`
	// LabelSelector watches only objects whose labels match; nil matches
	// all (an empty, non-nil selector is an error).
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// FieldSelector watches only objects whose fields match.
	FieldSelector *FieldSelector `json:"fieldSelector,omitempty"`
	// Namespace limits the namespaces watched; nil means all of them.
	Namespace *NamespaceSelector `json:"namespace,omitempty"`

	// JQFilter is a jq program run on each object; its output is the
	// context's FilterResult, and a Modified event that leaves it unchanged
	// does not run the hook.
	JQFilter string `json:"jqFilter,omitempty"`
	// AllowFailure makes a failed run logged and dropped instead of retried.
	AllowFailure bool `json:"allowFailure,omitempty"`
	// Queue is the queue the runs go to; empty means "main".
	Queue string `json:"queue,omitempty"`
	// Group makes the binding deliver Group contexts (its Synchronization
	// included) with the snapshots of every kubernetes binding of the group.
	Group string `json:"group,omitempty"`
	// IncludeSnapshotsFrom names kubernetes bindings of this hook whose
	// current objects the context carries under Snapshots.
	IncludeSnapshotsFrom []string `json:"includeSnapshotsFrom,omitempty"`
	// ResynchronizationPeriod, when not zero, delivers a new
	// Synchronization with the current objects this often.
	ResynchronizationPeriod time.Duration `json:"-"`

	// Finalizer (extension) is a finalizer the runtime keeps on every
	// watched object; deleting one delivers an EventFinalize context, and the
	// finalizer is removed once that run succeeds. Not with Group.
	Finalizer string `json:"finalizer,omitempty"`
	// ExecuteHookOnOwnStatusChange (extension) also runs the hook on
	// modifications that only change status this hook wrote with Status.
	ExecuteHookOnOwnStatusChange bool `json:"executeHookOnOwnStatusChange,omitempty"`
	// StaleAfter (extension) is how long this binding's view may go without
	// an event, a bookmark or a successful list before it is stale and its
	// watch is restarted; zero means Settings.StaleAfter. At least a second;
	// keep it well above the API server's bookmark period (about a minute).
	StaleAfter time.Duration `json:"-"`
}

// MarshalJSON writes the binding with its durations as Go duration strings.
func (b KubernetesBinding) MarshalJSON() ([]byte, error) {
	type plain KubernetesBinding // without this method
	return json.Marshal(struct {
		plain
		ResynchronizationPeriod string `json:"resynchronizationPeriod,omitempty"`
		StaleAfter              string `json:"staleAfter,omitempty"`
	}{plain(b), durationString(b.ResynchronizationPeriod), durationString(b.StaleAfter)})
}

// Events is a list of event types for KubernetesBinding.ExecuteHookOnEvent.
// It always marshals as a list, so that an empty one says "no events".
type Events []string

// OnEvents returns the list of event types for ExecuteHookOnEvent. With no
// arguments it returns an empty list, which makes the binding snapshot-only.
func OnEvents(types ...string) *Events {
	e := Events(append([]string{}, types...))
	return &e
}

// MarshalJSON writes the list, [] when empty.
func (e Events) MarshalJSON() ([]byte, error) {
	if e == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(e))
}

// NameSelector picks objects (or namespaces) by name.
type NameSelector struct {
	MatchNames []string `json:"matchNames"`
}

// FieldSelector picks objects by field values; all expressions must match.
type FieldSelector struct {
	MatchExpressions []FieldRequirement `json:"matchExpressions"`
}

// FieldRequirement is one field selector expression, such as
// {Field: "status.phase", Operator: "Equals", Value: "Running"}. Operator is
// "=", "==" or "Equals", or "!=" or "NotEquals". Value may be empty.
type FieldRequirement struct {
	Field    string `json:"field"`
	Operator string `json:"operator"`
	Value    string `json:"value"`
}

// NamespaceSelector picks the namespaces a binding watches: those named,
// plus those whose labels match (also namespaces that start matching
// later). At least one of the two must be set.
type NamespaceSelector struct {
	NameSelector  *NameSelector         `json:"nameSelector,omitempty"`
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// Settings are hook-wide settings.
type Settings struct {
	// ExecutionMinInterval, when not zero, allows at most one run per
	// interval once ExecutionBurst runs went back to back.
	ExecutionMinInterval time.Duration `json:"-"`
	// ExecutionBurst is the number of runs allowed back to back; zero means
	// the runtime's default (1 when ExecutionMinInterval is set).
	ExecutionBurst int `json:"executionBurst,omitempty"`
	// Timeout (extension) ends a run that takes longer, as a failure; zero
	// means the operator's --hook-timeout.
	Timeout time.Duration `json:"-"`
	// Parallelism (extension) lets up to this many runs for different
	// objects go on at once (for a resident hook, up to this many
	// processes); zero means 1, one run at a time.
	Parallelism int `json:"parallelism,omitempty"`
	// Sharded (extension): with the operator's --sharding, the hook runs on
	// every replica, for the objects that replica owns.
	Sharded bool `json:"sharded,omitempty"`
	// Resident (extension) keeps the hook's process running between runs:
	// the runtime starts it once and sends each run as a request, which Run
	// serves with the same handler. No other code changes.
	Resident bool `json:"resident,omitempty"`
	// ResidentMaxRuns (extension) recycles a resident process after this
	// many runs; zero means the runtime's default (10000).
	ResidentMaxRuns int `json:"residentMaxRuns,omitempty"`
	// ResidentMaxMemory (extension), in bytes, recycles a resident process
	// whose resident memory exceeds it after a run; zero means the runtime's
	// default (128Mi). Printed as a quantity: 256 << 20 is "256Mi".
	ResidentMaxMemory int64 `json:"-"`
	// StaleAfter (extension) is the KubernetesBinding.StaleAfter of each of
	// the hook's kubernetes bindings that sets none; zero means the
	// operator's --watch-idle-timeout (3m by default).
	StaleAfter time.Duration `json:"-"`
}

// MarshalJSON writes the settings with durations as Go duration strings.
func (s Settings) MarshalJSON() ([]byte, error) {
	type plain Settings // without this method
	return json.Marshal(struct {
		ExecutionMinInterval string `json:"executionMinInterval,omitempty"`
		plain
		Timeout           string `json:"timeout,omitempty"`
		ResidentMaxMemory string `json:"residentMaxMemory,omitempty"`
		StaleAfter        string `json:"staleAfter,omitempty"`
	}{durationString(s.ExecutionMinInterval), plain(s), durationString(s.Timeout), sizeString(s.ResidentMaxMemory), durationString(s.StaleAfter)})
}

// sizeString writes n bytes as a Kubernetes quantity, as the runtime reads
// sizes ("256Mi", or plain bytes when no binary suffix fits); "" for zero.
func sizeString(n int64) string {
	if n == 0 {
		return ""
	}
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// Ptr returns a pointer to v, for the optional fields of a Config:
// OnStartup: Ptr(10), ExecuteHookOnSynchronization: Ptr(false).
func Ptr[T any](v T) *T { return &v }

// durationString writes d as the runtime reads durations ("30s", "10m",
// "1h30m"), without the zero units time.Duration.String adds; "" for zero.
func durationString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
