package hook

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const testHook = "pods/on-pod.sh"

// want is one expected problem: the field path, exactly, and a piece of the
// reason.
type want struct{ field, reason string }

// parseErrors parses cfg and returns its problems, failing the test when
// the error is not ConfigErrors or a problem does not name the hook.
func parseErrors(t *testing.T, cfg string) ConfigErrors {
	t.Helper()
	_, err := ParseConfig(testHook, []byte(cfg))
	if err == nil {
		return nil
	}
	var errs ConfigErrors
	if !errors.As(err, &errs) {
		t.Fatalf("error is %T, not ConfigErrors: %v", err, err)
	}
	for _, e := range errs {
		if e.Hook != testHook {
			t.Errorf("problem %q names hook %q, want %q", e, e.Hook, testHook)
		}
		if !strings.HasPrefix(e.Error(), "hook "+testHook+": ") {
			t.Errorf("message %q does not start with the hook", e)
		}
		if e.Field != "" && !strings.Contains(e.Error(), ": "+e.Field+": ") {
			t.Errorf("message %q does not name the field %q", e, e.Field)
		}
	}
	return errs
}

func checkProblems(t *testing.T, cfg string, wants ...want) {
	t.Helper()
	errs := parseErrors(t, cfg)
	if len(errs) != len(wants) {
		t.Fatalf("got %d problems, want %d:\n%v", len(errs), len(wants), errs)
	}
	for i, w := range wants {
		if errs[i].Field != w.field || !strings.Contains(errs[i].Reason, w.reason) {
			t.Errorf("problem %d is %q;\nwant field %q and a reason containing %q", i, errs[i], w.field, w.reason)
		}
	}
}

func mustParse(t *testing.T, cfg string) Config {
	t.Helper()
	c, err := ParseConfig(testHook, []byte(cfg))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	c := mustParse(t, `
configVersion: v1
schedule:
- crontab: "*/5 * * * *"
kubernetes:
- kind: Pod
settings:
  executionMinInterval: 10s
`)
	wantSchedule := []ScheduleBinding{{Common: Common{Name: "schedule", Queue: "main"}, Crontab: "*/5 * * * *"}}
	if !reflect.DeepEqual(c.Schedule, wantSchedule) {
		t.Errorf("schedule = %+v, want %+v", c.Schedule, wantSchedule)
	}
	wantKube := []KubernetesBinding{{
		Common:                       Common{Name: "kubernetes", Queue: "main"},
		Kind:                         "Pod",
		ExecuteHookOnEvent:           []string{Added, Modified, Deleted},
		ExecuteHookOnSynchronization: true,
		WaitForSynchronization:       true,
		KeepFullObjectsInMemory:      true,
	}}
	if !reflect.DeepEqual(c.Kubernetes, wantKube) {
		t.Errorf("kubernetes = %+v, want %+v", c.Kubernetes, wantKube)
	}
	if c.OnStartup != nil {
		t.Errorf("onStartup = %d, want nil", *c.OnStartup)
	}
	if want := (Settings{ExecutionMinInterval: 10 * time.Second, ExecutionBurst: 1}); c.Settings != want {
		t.Errorf("settings = %+v, want %+v (burst defaults to 1 with an interval)", c.Settings, want)
	}
}

// fullYAML sets every key of every binding kind.
const fullYAML = `
configVersion: v1
onStartup: 10
settings:
  executionMinInterval: 5s
  executionBurst: 3
  timeout: 2m
  staleAfter: 10m
schedule:
- name: every-minute
  crontab: "0 * * * * *"
  allowFailure: true
  queue: slow
  group: pods
  includeSnapshotsFrom: [pods]
kubernetes:
- name: pods
  apiVersion: v1
  kind: Pod
  executeHookOnEvent: [Added, Deleted]
  executeHookOnSynchronization: false
  waitForSynchronization: false
  keepFullObjectsInMemory: false
  queue: pods
  group: pods
  allowFailure: true
  includeSnapshotsFrom: [pods, nodes]
  nameSelector:
    matchNames: [a, b]
  labelSelector:
    matchLabels:
      app: web
      app.kubernetes.io/part-of: shop
    matchExpressions:
    - {key: tier, operator: In, values: [front, back]}
    - {key: canary, operator: DoesNotExist}
  fieldSelector:
    matchExpressions:
    - {field: status.phase, operator: Equals, value: Running}
    - {field: spec.nodeName, operator: "!=", value: "a,b=c"}
  namespace:
    nameSelector:
      matchNames: [default]
    labelSelector:
      matchLabels: {watch: "true"}
  jqFilter: '.metadata.labels // {}'
  resynchronizationPeriod: 10m
  staleAfter: 90s
- name: nodes
  kind: Node
  watchEvent: [Modified]
kubernetesValidating:
- name: policy.example.com
  group: pods
  includeSnapshotsFrom: [nodes]
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 5
  labelSelector: {matchLabels: {validate: "yes"}}
  namespace: {labelSelector: {matchLabels: {validate: "yes"}}}
  matchConditions: [{name: not-system, expression: "true"}]
  rules:
  - {apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE, UPDATE], scope: Namespaced}
kubernetesMutating:
- name: defaults.example.com
  rules:
  - {apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: ["*"]}
kubernetesCustomResourceConversion:
- name: crontabs
  crdName: crontabs.stable.example.com
  conversions:
  - {fromVersion: stable.example.com/v1beta1, toVersion: stable.example.com/v1}
`

func TestEveryKey(t *testing.T) {
	c := mustParse(t, fullYAML)
	if c.OnStartup == nil || *c.OnStartup != 10 {
		t.Errorf("onStartup = %v, want 10", c.OnStartup)
	}
	if want := (Settings{ExecutionMinInterval: 5 * time.Second, ExecutionBurst: 3, Timeout: 2 * time.Minute, StaleAfter: 10 * time.Minute}); c.Settings != want {
		t.Errorf("settings = %+v, want %+v", c.Settings, want)
	}
	wantSchedule := []ScheduleBinding{{
		Common:  Common{Name: "every-minute", Queue: "slow", AllowFailure: true, Group: "pods", IncludeSnapshotsFrom: []string{"pods"}},
		Crontab: "0 * * * * *",
	}}
	if !reflect.DeepEqual(c.Schedule, wantSchedule) {
		t.Errorf("schedule = %+v\nwant %+v", c.Schedule, wantSchedule)
	}
	if len(c.Kubernetes) != 2 {
		t.Fatalf("%d kubernetes bindings, want 2", len(c.Kubernetes))
	}
	k := c.Kubernetes[0]
	if k.Filter == nil || k.Filter.String() != ".metadata.labels // {}" {
		t.Errorf("jqFilter not compiled: %v", k.Filter)
	}
	k.Filter = nil
	want := KubernetesBinding{
		Common:             Common{Name: "pods", Queue: "pods", AllowFailure: true, Group: "pods", IncludeSnapshotsFrom: []string{"pods", "nodes"}},
		APIVersion:         "v1",
		Kind:               "Pod",
		ExecuteHookOnEvent: []string{Added, Deleted},
		NameSelector:       []string{"a", "b"},
		LabelSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"app": "web", "app.kubernetes.io/part-of": "shop"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "back"}},
				{Key: "canary", Operator: metav1.LabelSelectorOpDoesNotExist},
			},
		},
		// Field selector values are escaped as the API server expects.
		FieldSelector: `status.phase=Running,spec.nodeName!=a\,b\=c`,
		Namespace: &NamespaceSelector{
			Names:         []string{"default"},
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"watch": "true"}},
		},
		JQFilter:                ".metadata.labels // {}",
		ResynchronizationPeriod: 10 * time.Minute,
		StaleAfter:              90 * time.Second,
	}
	if !reflect.DeepEqual(k, want) {
		t.Errorf("kubernetes[0] = %+v\nwant %+v", k, want)
	}
	if got := c.Kubernetes[1].ExecuteHookOnEvent; !reflect.DeepEqual(got, []string{Modified}) {
		t.Errorf("watchEvent (legacy alias) gave executeHookOnEvent %v, want [Modified]", got)
	}

	if len(c.Validating) != 1 || len(c.Mutating) != 1 || len(c.Conversion) != 1 {
		t.Fatalf("admission/conversion bindings: %d validating, %d mutating, %d conversion; want 1 each", len(c.Validating), len(c.Mutating), len(c.Conversion))
	}
	v := c.Validating[0]
	if v.Name != "policy.example.com" || v.Group != "pods" || v.Queue != "main" || !reflect.DeepEqual(v.IncludeSnapshotsFrom, []string{"nodes"}) {
		t.Errorf("validating common fields = %+v", v.Common)
	}
	if v.Raw["failurePolicy"] != "Fail" || v.Raw["timeoutSeconds"] != int64(5) || v.Raw["rules"] == nil {
		t.Errorf("validating binding not kept as given: %v", v.Raw)
	}
	if c.Mutating[0].Name != "defaults.example.com" {
		t.Errorf("mutating = %+v", c.Mutating[0])
	}
	conv := c.Conversion[0]
	wantConv := []ConversionRule{{FromVersion: "stable.example.com/v1beta1", ToVersion: "stable.example.com/v1"}}
	if conv.Name != "crontabs" || conv.CRDName != "crontabs.stable.example.com" || !reflect.DeepEqual(conv.Conversions, wantConv) {
		t.Errorf("conversion = %+v", conv)
	}
}

func TestJSONConfigEqualsYAML(t *testing.T) {
	fromJSON := mustParse(t, `{
  "configVersion": "v1",
  "onStartup": 1,
  "kubernetes": [{"name": "cm", "kind": "ConfigMap", "executeHookOnEvent": [],
    "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
    "jqFilter": ".data"}]
}`)
	fromYAML := mustParse(t, `
configVersion: v1
onStartup: 1
kubernetes:
- name: cm
  kind: ConfigMap
  executeHookOnEvent: []
  labelSelector:
    matchExpressions:
    - key: a
      operator: Exists
  jqFilter: .data
`)
	fromJSON.Kubernetes[0].Filter, fromYAML.Kubernetes[0].Filter = nil, nil
	if !reflect.DeepEqual(fromJSON, fromYAML) {
		t.Errorf("JSON and YAML differ:\n%+v\n%+v", fromJSON, fromYAML)
	}
	if ev := fromJSON.Kubernetes[0].ExecuteHookOnEvent; ev == nil || len(ev) != 0 {
		t.Errorf("executeHookOnEvent: [] gave %#v, want an empty, non-nil list (snapshot-only binding)", ev)
	}
}

func TestAcceptedVariants(t *testing.T) {
	for name, cfg := range map[string]string{
		"crontab with seconds":        `{configVersion: v1, schedule: [{crontab: "*/10 * * * * *"}]}`,
		"crontab descriptor":          `{configVersion: v1, schedule: [{crontab: "@every 1m"}]}`,
		"waitForSynchronization off":  `{configVersion: v1, kubernetes: [{kind: Pod, queue: slow, waitForSynchronization: false}]}`,
		"nulls count as absent":       `{configVersion: v1, kubernetes: [{kind: Pod, name: null, labelSelector: null, executeHookOnEvent: null}]}`,
		"field operators":             `{configVersion: v1, kubernetes: [{kind: Pod, fieldSelector: {matchExpressions: [{field: a, operator: "==", value: ""}, {field: b, operator: NotEquals, value: x}]}}]}`,
		"snapshot of a later binding": `{configVersion: v1, kubernetes: [{name: a, kind: Pod, includeSnapshotsFrom: [b]}, {name: b, kind: Node}]}`,
		"webhook only":                `{configVersion: v1, kubernetesValidating: [{name: a.example.com}]}`,
		"onStartup as 1.0":            `{"configVersion": "v1", "onStartup": 1.0}`,
		"same schedule names":         `{configVersion: v1, schedule: [{crontab: "* * * * *"}, {crontab: "0 * * * *"}]}`,
	} {
		t.Run(name, func(t *testing.T) { mustParse(t, cfg) })
	}
	c := mustParse(t, `{configVersion: v1, kubernetes: [{kind: Pod, fieldSelector: {matchExpressions: [{field: a, operator: "==", value: ""}, {field: b, operator: NotEquals, value: x}]}}]}`)
	if got := c.Kubernetes[0].FieldSelector; got != "a=,b!=x" {
		t.Errorf("field selector %q, want %q", got, "a=,b!=x")
	}
}

func TestProblems(t *testing.T) {
	cases := []struct {
		name  string
		cfg   string
		wants []want
	}{
		// The output as a whole.
		{"empty output", "  \n", []want{{"", "--config printed nothing"}}},
		{"invalid YAML", "configVersion: v1\nkubernetes: [", []want{{"", "not valid YAML or JSON"}}},
		{"unquoted crontab star", "configVersion: v1\nschedule:\n- crontab: */5 * * * *\n", []want{{"", "quote values that start with *"}}},
		{"a list", "- configVersion: v1", []want{{"", "must print an object"}}},
		{"duplicate key", "configVersion: v1\nonStartup: 1\nonStartup: 2\n", []want{{"", "onStartup"}}},

		// configVersion.
		{"configVersion missing", "onStartup: 1", []want{{"configVersion", "add configVersion: v1"}}},
		{"configVersion v0", "configVersion: v0\nonKubernetesEvent: []", []want{{"configVersion", "set configVersion: v1"}}},
		{"configVersion number", "configVersion: 1\nonStartup: 1", []want{{"configVersion", "the number 1 is not supported; write the configuration for configVersion: v1"}}},
		{"v0 syntax without configVersion", "onStartup: 1\nonKubernetesEvent: [{kind: Pod}]", []want{
			{"configVersion", "missing"}, {"onKubernetesEvent", "write kubernetes bindings instead"}}},

		// Unknown keys and types.
		{"unknown top-level key", "configVersion: v1\nonStartup: 1\nkubernets: []", []want{{"kubernets", `did you mean "kubernetes"?`}}},
		{"unknown key, no near match", "configVersion: v1\nonStartup: 1\nfoo: 1", []want{{"foo", "unknown key; remove it (known keys here: configVersion,"}}},
		{"unknown binding key", "configVersion: v1\nkubernetes: [{kind: Pod, executeHookOnEvents: [Added]}]", []want{{"kubernetes[0].executeHookOnEvents", `did you mean "executeHookOnEvent"?`}}},
		{"wrong case key", "configVersion: v1\nkubernetes: [{kind: Pod, jqfilter: .a}]", []want{{"kubernetes[0].jqfilter", `did you mean "jqFilter"?`}}},
		{"onStartup string", `{configVersion: v1, onStartup: "1"}`, []want{{"onStartup", `must be an integer, not the string "1"; write it without quotes`}}},
		{"onStartup fraction", `{configVersion: v1, onStartup: 1.5}`, []want{{"onStartup", "must be an integer"}}},
		{"kubernetes not a list", `{configVersion: v1, kubernetes: {kind: Pod}}`, []want{{"kubernetes", "must be a list, not an object"}}},
		{"binding not an object", `{configVersion: v1, kubernetes: [Pod]}`, []want{{"kubernetes[0]", `must be an object (key: value pairs), not the string "Pod"`}}},
		{"kind a list", `{configVersion: v1, kubernetes: [{kind: [Pod]}]}`, []want{{"kubernetes[0].kind", "must be a string, not a list"}}},
		{"bool as string", `{configVersion: v1, kubernetes: [{kind: Pod, executeHookOnSynchronization: "false"}]}`, []want{
			{"kubernetes[0].executeHookOnSynchronization", `must be true or false, not the string "false"`}}},

		// schedule.
		{"crontab missing", `{configVersion: v1, schedule: [{name: x}]}`, []want{{"schedule[0].crontab", "missing; set it to a crontab"}}},
		{"crontab empty", `{configVersion: v1, schedule: [{crontab: ""}]}`, []want{{"schedule[0].crontab", "must not be empty"}}},
		{"crontab field count", `{configVersion: v1, schedule: [{crontab: "* * *"}]}`, []want{{"schedule[0].crontab", "has 3 fields; write 5"}}},
		{"crontab out of range", `{configVersion: v1, schedule: [{crontab: "61 * * * *"}]}`, []want{{"schedule[0].crontab", "above maximum"}}},
		{"schedule snapshots without kubernetes", `{configVersion: v1, schedule: [{crontab: "* * * * *", includeSnapshotsFrom: [pods]}]}`, []want{
			{"schedule[0].includeSnapshotsFrom[0]", "this hook has no kubernetes bindings"}}},

		// kubernetes.
		{"kind missing", `{configVersion: v1, kubernetes: [{name: x}]}`, []want{{"kubernetes[0].kind", "missing; set it to the kind of objects to watch"}}},
		{"apiVersion invalid", `{configVersion: v1, kubernetes: [{kind: Pod, apiVersion: "a/b/c"}]}`, []want{{"kubernetes[0].apiVersion", "is not an API version"}}},
		{"event type wrong case", `{configVersion: v1, kubernetes: [{kind: Pod, executeHookOnEvent: [added]}]}`, []want{
			{"kubernetes[0].executeHookOnEvent[0]", `"added" is not an event type (did you mean "Added"?); use Added, Modified or Deleted`}}},
		{"event type twice", `{configVersion: v1, kubernetes: [{kind: Pod, watchEvent: [Added, Added]}]}`, []want{{"kubernetes[0].watchEvent[1]", "listed twice"}}},
		{"event list as a string", `{configVersion: v1, kubernetes: [{kind: Pod, executeHookOnEvent: Added}]}`, []want{
			{"kubernetes[0].executeHookOnEvent", `must be a list, not the string "Added"; write it as a list: ["Added"]`}}},
		{"event list and legacy alias", `{configVersion: v1, kubernetes: [{kind: Pod, executeHookOnEvent: [Added], watchEvent: [Added]}]}`, []want{
			{"kubernetes[0].watchEvent", "keep only executeHookOnEvent"}}},
		{"waitForSynchronization on main", `{configVersion: v1, kubernetes: [{kind: Pod, waitForSynchronization: false}]}`, []want{
			{"kubernetes[0].waitForSynchronization", "set queue to a named queue"}}},
		{"waitForSynchronization on explicit main", `{configVersion: v1, kubernetes: [{kind: Pod, queue: main, waitForSynchronization: false}]}`, []want{
			{"kubernetes[0].waitForSynchronization", "only allowed on a queue other than"}}},
		{"duplicate names", `{configVersion: v1, kubernetes: [{name: pods, kind: Pod}, {name: pods, kind: Pod}]}`, []want{
			{"kubernetes[1].name", `"pods" is already the name of kubernetes[0]`}}},
		{"duplicate default names", `{configVersion: v1, kubernetes: [{kind: Pod}, {kind: Node}]}`, []want{
			{"kubernetes[1]", `has no name, so it gets the default "kubernetes", which kubernetes[0] already has`}}},
		{"unknown snapshot", `{configVersion: v1, kubernetes: [{name: pods, kind: Pod}, {name: nodes, kind: Node, includeSnapshotsFrom: [nodes, podz]}]}`, []want{
			{"kubernetes[1].includeSnapshotsFrom[1]", `"podz" is not the name of a kubernetes binding of this hook; use one of: "pods", "nodes"`}}},
		{"jqFilter invalid", `{configVersion: v1, kubernetes: [{kind: Pod, jqFilter: ".a |"}]}`, []want{
			{"kubernetes[0].jqFilter", `jq program ".a |": unexpected EOF; fix the program`}}},
		{"resync not a duration", `{configVersion: v1, kubernetes: [{kind: Pod, resynchronizationPeriod: "5 minutes"}]}`, []want{
			{"kubernetes[0].resynchronizationPeriod", `"5 minutes" is not a duration`}}},
		{"resync a number", `{configVersion: v1, kubernetes: [{kind: Pod, resynchronizationPeriod: 300}]}`, []want{
			{"kubernetes[0].resynchronizationPeriod", `add a unit, for example "300s"`}}},
		{"resync negative", `{configVersion: v1, kubernetes: [{kind: Pod, resynchronizationPeriod: "-1m"}]}`, []want{
			{"kubernetes[0].resynchronizationPeriod", "is negative"}}},

		// nameSelector.
		{"nameSelector without matchNames", `{configVersion: v1, kubernetes: [{kind: Pod, nameSelector: {}}]}`, []want{
			{"kubernetes[0].nameSelector.matchNames", "missing; list the names to match, or remove nameSelector"}}},
		{"nameSelector empty", `{configVersion: v1, kubernetes: [{kind: Pod, nameSelector: {matchNames: []}}]}`, []want{
			{"kubernetes[0].nameSelector.matchNames", "is empty, so nothing would match"}}},
		{"nameSelector as a list", `{configVersion: v1, kubernetes: [{kind: Pod, nameSelector: [a]}]}`, []want{
			{"kubernetes[0].nameSelector", "must be an object"}}},

		// labelSelector.
		{"labelSelector empty", `{configVersion: v1, kubernetes: [{kind: Pod, labelSelector: {}}]}`, []want{
			{"kubernetes[0].labelSelector", "is empty; set matchLabels or matchExpressions"}}},
		{"label operator", `{configVersion: v1, kubernetes: [{kind: Pod, labelSelector: {matchExpressions: [{key: a, operator: Equals, values: [b]}]}}]}`, []want{
			{"kubernetes[0].labelSelector.matchExpressions[0].operator", `"Equals" is not a label selector operator; use In, NotIn, Exists or DoesNotExist`}}},
		{"label In without values", `{configVersion: v1, kubernetes: [{kind: Pod, labelSelector: {matchExpressions: [{key: a, operator: In}]}}]}`, []want{
			{"kubernetes[0].labelSelector.matchExpressions[0].values", "In needs at least one value"}}},
		{"label Exists with values", `{configVersion: v1, kubernetes: [{kind: Pod, labelSelector: {matchExpressions: [{key: a, operator: Exists, values: [b]}]}}]}`, []want{
			{"kubernetes[0].labelSelector.matchExpressions[0].values", "must be empty with Exists"}}},
		{"label key invalid", `{configVersion: v1, kubernetes: [{kind: Pod, labelSelector: {matchExpressions: [{key: "bad key", operator: Exists}]}}]}`, []want{
			{"kubernetes[0].labelSelector.matchExpressions[0]", "use a valid label name"}}},
		{"label expression key missing", `{configVersion: v1, kubernetes: [{kind: Pod, labelSelector: {matchExpressions: [{operator: Exists}]}}]}`, []want{
			{"kubernetes[0].labelSelector.matchExpressions[0].key", "missing"}}},
		{"label expression unknown key", `{configVersion: v1, kubernetes: [{kind: Pod, labelSelector: {matchExpressions: [{key: a, operator: In, value: [b]}]}}]}`, []want{
			{"kubernetes[0].labelSelector.matchExpressions[0].value", `did you mean "values"?`},
			{"kubernetes[0].labelSelector.matchExpressions[0].values", "In needs at least one value"}}},
		{"matchLabels value not a string", `{configVersion: v1, kubernetes: [{kind: Pod, labelSelector: {matchLabels: {app: 1, "example.com/on": yes}}}]}`, []want{
			{"kubernetes[0].labelSelector.matchLabels.app", "must be a string, not the number 1; quote it"},
			{`kubernetes[0].labelSelector.matchLabels["example.com/on"]`, "must be a string, not the boolean true; quote it"}}},
		{"matchLabels value invalid", `{configVersion: v1, kubernetes: [{kind: Pod, labelSelector: {matchLabels: {app: "a b"}}}]}`, []want{
			{"kubernetes[0].labelSelector.matchLabels.app", "use a valid label name and value"}}},

		// fieldSelector.
		{"fieldSelector without expressions", `{configVersion: v1, kubernetes: [{kind: Pod, fieldSelector: {}}]}`, []want{
			{"kubernetes[0].fieldSelector.matchExpressions", "missing"}}},
		{"fieldSelector empty", `{configVersion: v1, kubernetes: [{kind: Pod, fieldSelector: {matchExpressions: []}}]}`, []want{
			{"kubernetes[0].fieldSelector.matchExpressions", "is empty"}}},
		{"field operator", `{configVersion: v1, kubernetes: [{kind: Pod, fieldSelector: {matchExpressions: [{field: a, operator: In, value: b}]}}]}`, []want{
			{"kubernetes[0].fieldSelector.matchExpressions[0].operator", `"In" is not a field selector operator; use =, ==, Equals, != or NotEquals`}}},
		{"field value missing", `{configVersion: v1, kubernetes: [{kind: Pod, fieldSelector: {matchExpressions: [{field: a, operator: "="}]}}]}`, []want{
			{"kubernetes[0].fieldSelector.matchExpressions[0].value", "missing; set the value to compare with"}}},
		{"field path invalid", `{configVersion: v1, kubernetes: [{kind: Pod, fieldSelector: {matchExpressions: [{field: "a=b", operator: "=", value: c}]}}]}`, []want{
			{"kubernetes[0].fieldSelector.matchExpressions[0].field", "is not a field path"}}},
		{"metadata.name with nameSelector", `{configVersion: v1, kubernetes: [{kind: Pod, nameSelector: {matchNames: [a]}, fieldSelector: {matchExpressions: [{field: metadata.name, operator: "=", value: a}]}}]}`, []want{
			{"kubernetes[0].fieldSelector.matchExpressions[0].field", "metadata.name cannot be combined with nameSelector"}}},

		// namespace.
		{"namespace empty", `{configVersion: v1, kubernetes: [{kind: Pod, namespace: {}}]}`, []want{
			{"kubernetes[0].namespace", "remove namespace to watch every namespace"}}},
		{"namespace typo", `{configVersion: v1, kubernetes: [{kind: Pod, namespace: {nameSelector: {matchNames: [a]}, labelSelectors: {}}}]}`, []want{
			{"kubernetes[0].namespace.labelSelectors", `did you mean "labelSelector"?`}}},
		{"namespace label selector", `{configVersion: v1, kubernetes: [{kind: Pod, namespace: {labelSelector: {matchExpressions: [{key: env, operator: NotIn}]}}}]}`, []want{
			{"kubernetes[0].namespace.labelSelector.matchExpressions[0].values", "NotIn needs at least one value"}}},

		// settings.
		{"interval not a duration", `{configVersion: v1, onStartup: 1, settings: {executionMinInterval: 10}}`, []want{
			{"settings.executionMinInterval", "must be a duration string"}}},
		{"burst negative", `{configVersion: v1, onStartup: 1, settings: {executionBurst: -1}}`, []want{{"settings.executionBurst", "is negative"}}},
		{"burst zero with interval", `{configVersion: v1, onStartup: 1, settings: {executionMinInterval: 1s, executionBurst: 0}}`, []want{
			{"settings.executionBurst", "would never let the hook run"}}},
		{"timeout zero", `{configVersion: v1, onStartup: 1, settings: {timeout: 0s}}`, []want{{"settings.timeout", "must be longer than 0"}}},
		{"parallelism zero", `{configVersion: v1, onStartup: 1, settings: {parallelism: 0}}`, []want{{"settings.parallelism", "use 1"}}},
		{"parallelism with group", `{configVersion: v1, kubernetes: [{kind: Pod}, {name: b, kind: Pod, group: g}], settings: {parallelism: 4}}`, []want{
			{"kubernetes[1].group", "cannot be used with settings.parallelism 4"}}},
		{"sharded not a bool", `{configVersion: v1, onStartup: 1, settings: {sharded: "yes"}}`, []want{{"settings.sharded", "must be true or false"}}},
		{"settings unknown key", `{configVersion: v1, onStartup: 1, settings: {executionMinInterva: 1s}}`, []want{
			{"settings.executionMinInterva", `did you mean "executionMinInterval"?`}}},

		// Admission and conversion.
		{"webhook name missing", `{configVersion: v1, kubernetesValidating: [{failurePolicy: Fail}]}`, []want{{"kubernetesValidating[0].name", "missing"}}},
		{"webhook duplicate names", `{configVersion: v1, kubernetesMutating: [{name: a.b.c}, {name: a.b.c}]}`, []want{{"kubernetesMutating[1].name", "already used by kubernetesMutating[0]"}}},
		{"webhook name not qualified", `{configVersion: v1, kubernetesMutating: [{name: check.local}, {name: Policy.Example.com}]}`, []want{
			{"kubernetesMutating[0].name", "at least three parts"}, {"kubernetesMutating[1].name", "lowercase DNS name"}}},
		{"webhook enums", `{configVersion: v1, kubernetesValidating: [{name: a.b.c, failurePolicy: fail, sideEffects: Some, timeoutSeconds: 60}]}`, []want{
			{"kubernetesValidating[0].failurePolicy", `did you mean "Fail"?`},
			{"kubernetesValidating[0].sideEffects", "use None or NoneOnDryRun"},
			{"kubernetesValidating[0].timeoutSeconds", "use 1 to 30"}}},
		{"webhook rules", `{configVersion: v1, kubernetesValidating: [{name: a.b.c, rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [create]}]}]}`, []want{
			{"kubernetesValidating[0].rules[0].operations[0]", `did you mean "CREATE"?`}}},
		{"webhook unknown key", `{configVersion: v1, kubernetesValidating: [{name: a.b.c, queue: x}]}`, []want{
			{"kubernetesValidating[0].queue", "unknown key"}}},
		{"conversion incomplete", `{configVersion: v1, kubernetesCustomResourceConversion: [{name: c}]}`, []want{
			{"kubernetesCustomResourceConversion[0].crdName", "missing"},
			{"kubernetesCustomResourceConversion[0].conversions", "missing"}}},
		{"conversion rule incomplete", `{configVersion: v1, kubernetesCustomResourceConversion: [{name: c, crdName: a.b, conversions: [{fromVersion: a/v1}]}]}`, []want{
			{"kubernetesCustomResourceConversion[0].conversions[0].toVersion", "missing"}}},
		{"conversion empty", `{configVersion: v1, kubernetesCustomResourceConversion: [{name: c, crdName: a.b, conversions: []}]}`, []want{
			{"kubernetesCustomResourceConversion[0].conversions", "is empty"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkProblems(t, tc.cfg, tc.wants...) })
	}
}

// TestAllProblemsAtOnce checks that one pass reports every problem, each
// with its own field path.
func TestAllProblemsAtOnce(t *testing.T) {
	checkProblems(t, `
configVersion: v1
onStartup: "1"
kubernetes:
- kind: Pod
  executeHookOnEvents: [Added]
  watchEvent: [Added, added]
  labelSelector: {matchExpressions: [{key: a, operator: in}]}
  fieldSelector: {matchExpressions: [{field: metadata.name, operator: "=~", value: 1}]}
  nameSelector: {matchNames: [a]}
  jqFilter: ".a |"
  waitForSynchronization: false
- kind: Pod
  includeSnapshotsFrom: [podz]
schedule:
- crontab: "* * *"
kubernets: []
settings: {executionBurst: -1, timeout: 5}
`,
		want{"onStartup", "must be an integer"},
		want{"kubernetes[0].watchEvent[1]", "is not an event type"},
		want{"kubernetes[0].waitForSynchronization", "only allowed on a queue"},
		want{"kubernetes[0].labelSelector.matchExpressions[0].operator", `did you mean "In"?`},
		want{"kubernetes[0].fieldSelector.matchExpressions[0].value", "must be a string"},
		want{"kubernetes[0].fieldSelector.matchExpressions[0].field", "cannot be combined with nameSelector"},
		want{"kubernetes[0].fieldSelector.matchExpressions[0].operator", "is not a field selector operator"},
		want{"kubernetes[0].jqFilter", "fix the program"},
		want{"kubernetes[0].executeHookOnEvents", "unknown key"},
		want{"kubernetes[1]", "already has"},
		want{"schedule[0].crontab", "has 3 fields"},
		want{"settings.executionBurst", "is negative"},
		want{"settings.timeout", "must be a duration string"},
		want{"kubernets", "unknown key"},
		want{"kubernetes[1].includeSnapshotsFrom[0]", `"podz" is not the name of a kubernetes binding`},
	)
}

func TestConfigErrorsMessage(t *testing.T) {
	errs := ConfigErrors{
		{Hook: "a.sh", Field: "kubernetes[0].kind", Reason: "missing"},
		{Hook: "b.sh", Reason: "--config printed nothing"},
	}
	want := "2 problems with hook configuration:\n  hook a.sh: kubernetes[0].kind: missing\n  hook b.sh: --config printed nothing"
	if errs.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", errs.Error(), want)
	}
	if one := errs[:1].Error(); one != "hook a.sh: kubernetes[0].kind: missing" {
		t.Errorf("one problem: %q", one)
	}
	var ce *ConfigError
	if !errors.As(error(errs), &ce) || ce.Hook != "a.sh" {
		t.Errorf("errors.As did not find the first problem")
	}
}

// Any --config output: ParseConfig does not panic, gives the same answer
// twice (no map-order dependence), and every error names the hook.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"configVersion: v1\nonStartup: 1\n",
		`{"configVersion":"v1","schedule":[{"name":"every","crontab":"*/5 * * * *"}]}`,
		"configVersion: v1\nkubernetes:\n- name: pods\n  kind: Pod\n  jqFilter: .metadata.labels\n  namespace: {nameSelector: {matchNames: [default]}}\n  labelSelector: {matchLabels: {app: web}}\n  group: g\n",
		"configVersion: v1\nkubernetes:\n- kind: ConfigMap\n  executeHookOnEvent: [Added, Bogus]\n",
		"configVersion: v1\nsettings: {executionMinInterval: 10s, executionBurst: 0, timeout: -1s}\n",
		"configVersion: v1\nkubernetesValidating:\n- name: v\n  rules: [{operations: [CREATE], apiVersions: [v1], resources: [pods]}]\n",
		"", "configVersion: v2", "- a\n- b", "{", "configVersion: v1\nkubernetes: 5\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err1 := ParseConfig("fuzz/hook.sh", data)
		_, err2 := ParseConfig("fuzz/hook.sh", data)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("two parses differ:\n%v\n%v", err1, err2)
		}
		if err1 != nil && !strings.Contains(err1.Error(), "fuzz/hook.sh") {
			t.Fatalf("error does not name the hook: %v", err1)
		}
	})
}
