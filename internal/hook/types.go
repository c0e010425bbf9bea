// Package hook finds the hooks in a folder, asks each for its configuration
// (`<hook> --config`), and validates it into the types below, which the rest
// of the runtime works from.
package hook

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/jq"
)

// Hook is one executable found under the hooks folder, with its parsed
// configuration.
type Hook struct {
	// Name is the hook's path relative to the hooks folder, with forward
	// slashes ("pods/on-create.sh"). It names the hook in logs, metrics and
	// binding contexts.
	Name string `json:"name"`
	// Path is the absolute path of the executable.
	Path string `json:"path"`
	// Dir is the hook's folder, the working directory of its runs.
	Dir    string `json:"dir"`
	Config Config `json:"config"`

	// folder is the hooks folder Load found the hook in, which CheckPath
	// checks Path against; zero for a hook made otherwise.
	folder folder
}

// Event types of kubernetes bindings.
const (
	Added    = "Added"
	Modified = "Modified"
	Deleted  = "Deleted"
)

// DefaultQueue is the queue of bindings that name none.
const DefaultQueue = "main"

// Config is a hook's validated configuration (configVersion v1).
type Config struct {
	// OnStartup is the hook's order among the onStartup hooks, or nil when
	// the hook does not run at start-up.
	OnStartup  *int                `json:"onStartup,omitempty"`
	Schedule   []ScheduleBinding   `json:"schedule,omitempty"`
	Kubernetes []KubernetesBinding `json:"kubernetes,omitempty"`
	// Admission and conversion bindings are served by the webhook server
	// (internal/webhook).
	Validating []WebhookBinding    `json:"kubernetesValidating,omitempty"`
	Mutating   []WebhookBinding    `json:"kubernetesMutating,omitempty"`
	Conversion []ConversionBinding `json:"kubernetesCustomResourceConversion,omitempty"`
	Settings   Settings            `json:"settings"`
	// Writes declares what the hook's operations write (extension), for
	// `hook-operator rbac`.
	Writes []Write `json:"writes,omitempty"`
}

// Settings are hook-wide settings.
type Settings struct {
	// ExecutionMinInterval and ExecutionBurst rate-limit the hook's runs: at
	// most ExecutionBurst runs back to back, then one per interval. Zero
	// interval means no limit.
	ExecutionMinInterval time.Duration `json:"executionMinInterval,omitempty"`
	ExecutionBurst       int           `json:"executionBurst,omitempty"`
	// Timeout ends a run that takes longer (EXT). Zero means the operator's
	// --hook-timeout.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Parallelism is how many runs for different objects may run at once
	// (EXT); 1 (the default) runs one at a time, as shell-operator does.
	Parallelism int `json:"parallelism,omitempty"`
	// Sharded (EXT): with --sharding, the hook's kubernetes bindings hold
	// only the objects this replica owns, and the hook runs on every
	// replica; hooks without it run on the leader alone.
	Sharded bool `json:"sharded,omitempty"`
	// Resident (EXT): the hook's process stays between runs and each run is
	// a request on its fd 3 (docs/running.md, Resident hooks).
	Resident bool `json:"resident,omitempty"`
	// ResidentMaxRuns recycles a resident process after this many runs;
	// DefaultResidentMaxRuns when resident and not given, zero otherwise.
	ResidentMaxRuns int `json:"residentMaxRuns,omitempty"`
	// ResidentMaxMemory recycles a resident process whose process group's
	// RSS after a run exceeds it, in bytes; DefaultResidentMaxMemory when
	// resident and not given, zero otherwise.
	ResidentMaxMemory int64 `json:"residentMaxMemory,omitempty"`
	// StaleAfter (EXT) is how long each kubernetes binding of the hook may
	// go without an event, a bookmark or a successful list before its view
	// counts as stale: its watch is restarted with a fresh list, and
	// binding_stale_after_seconds says so. Zero: the operator's
	// --watch-idle-timeout. A binding's own staleAfter overrides it.
	StaleAfter time.Duration `json:"staleAfter,omitempty"`
}

// MinStaleAfter is the shortest staleAfter: as --watch-idle-timeout, it
// leaves room for a watch's first bytes. Well below the API server's
// bookmark period (about a minute) a quiet but healthy watch is restarted
// each time, which docs/bindings.md warns of.
const MinStaleAfter = time.Second

// Defaults of a resident hook's limits (docs/operating.md says why).
const (
	DefaultResidentMaxRuns   = 10000
	DefaultResidentMaxMemory = 128 << 20
	// MinResidentMaxMemory is the smallest residentMaxMemory: a process's
	// RSS is never below it, so a smaller limit would recycle every run.
	MinResidentMaxMemory = 1 << 20
)

// Common holds the fields every binding kind shares.
type Common struct {
	Name         string `json:"name"`
	Queue        string `json:"queue"` // never empty after validation
	AllowFailure bool   `json:"allowFailure,omitempty"`
	Group        string `json:"group,omitempty"`
	// IncludeSnapshotsFrom names kubernetes bindings of the same hook.
	IncludeSnapshotsFrom []string `json:"includeSnapshotsFrom,omitempty"`
}

// ScheduleBinding runs the hook on a crontab.
type ScheduleBinding struct {
	Common
	// Crontab has 5 fields, or 6 with seconds first.
	Crontab string `json:"crontab"`
}

// KubernetesBinding runs the hook on events of watched objects.
type KubernetesBinding struct {
	Common
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	// ExecuteHookOnEvent lists the event types that run the hook; empty
	// means the binding only feeds snapshots.
	ExecuteHookOnEvent           []string `json:"executeHookOnEvent"`
	ExecuteHookOnSynchronization bool     `json:"executeHookOnSynchronization"`
	WaitForSynchronization       bool     `json:"waitForSynchronization"`
	KeepFullObjectsInMemory      bool     `json:"keepFullObjectsInMemory"`
	// NameSelector lists object names; empty means any.
	NameSelector []string `json:"nameSelector,omitempty"`
	// LabelSelector is nil when absent.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// FieldSelector is the API field selector string built from the
	// binding's matchExpressions ("metadata.name=x,status.phase!=Pending"),
	// or empty.
	FieldSelector string `json:"fieldSelector,omitempty"`
	// Namespace is nil when the binding watches all namespaces. The watch
	// ignores it for cluster-scoped kinds, whose scope only discovery knows.
	Namespace *NamespaceSelector `json:"namespace,omitempty"`
	// JQFilter is the source of the jqFilter, or empty; Filter is it compiled.
	JQFilter                string        `json:"jqFilter,omitempty"`
	Filter                  *jq.Filter    `json:"-"`
	ResynchronizationPeriod time.Duration `json:"resynchronizationPeriod,omitempty"`
	// Finalizer (extension) is a finalizer the runtime keeps on every
	// watched object; an object being deleted is delivered as a Finalize
	// event, and the finalizer is removed once that run succeeds.
	Finalizer string `json:"finalizer,omitempty"`
	// ExecuteHookOnOwnStatusChange (extension) delivers Modified events that
	// only change the status of an object whose status this hook writes with
	// the Status operation; without it they are dropped, so a hook does not
	// re-run because of its own status writes.
	ExecuteHookOnOwnStatusChange bool `json:"executeHookOnOwnStatusChange,omitempty"`
	// StaleAfter (extension) is settings.staleAfter for this binding alone;
	// zero: the hook's.
	StaleAfter time.Duration `json:"staleAfter,omitempty"`
}

// StaleAfterOf returns how long b, a kubernetes binding of a hook with
// settings s, may go without an event, a bookmark or a successful list:
// its own staleAfter, else the hook's, else def (the operator's
// --watch-idle-timeout; zero: never stale).
func StaleAfterOf(b *KubernetesBinding, s Settings, def time.Duration) time.Duration {
	switch {
	case b.StaleAfter > 0:
		return b.StaleAfter
	case s.StaleAfter > 0:
		return s.StaleAfter
	}
	return def
}

// NamespaceSelector picks the namespaces a binding watches: the listed
// names, plus (when LabelSelector is set) every namespace whose labels match,
// now or later.
type NamespaceSelector struct {
	Names         []string              `json:"names,omitempty"`
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// WebhookBinding is a validating or mutating admission binding. The fields
// are kept as given and become its webhook (webhook.Registration).
type WebhookBinding struct {
	Common
	Raw map[string]any `json:"spec"`
}

// The reinvocation policies of a mutating binding, as the API server's
// MutatingWebhook spells them.
const (
	// ReinvocationNever: the API server calls the webhook once per
	// request. It is the API server's default.
	ReinvocationNever = "Never"
	// ReinvocationIfNeeded: the API server calls the webhook again when a
	// mutating webhook called after it changed the object, so the hook
	// must give the same answer for an object it has already changed.
	ReinvocationIfNeeded = "IfNeeded"
)

// ReinvocationPolicy is the binding's reinvocationPolicy (checked at load:
// ReinvocationNever or ReinvocationIfNeeded, mutating bindings only), or ""
// when it sets none and the API server's default applies.
func (b *WebhookBinding) ReinvocationPolicy() string {
	s, _ := b.Raw["reinvocationPolicy"].(string)
	return s
}

// ConversionBinding is a CRD conversion binding: the hook converts the
// custom resources of the CRD named CRDName by its rules.
type ConversionBinding struct {
	Common
	CRDName     string           `json:"crdName"`
	Conversions []ConversionRule `json:"conversions"`
}

// ConversionRule is one conversion of a ConversionBinding. A version is
// "group/version", or "version" for that version of any group.
type ConversionRule struct {
	FromVersion string `json:"fromVersion"`
	ToVersion   string `json:"toVersion"`
}

// OnEvent reports whether events of type t run the hook.
func (b *KubernetesBinding) OnEvent(t string) bool { return slices.Contains(b.ExecuteHookOnEvent, t) }
