package hook

import (
	"strings"
	"testing"
)

// A mutating binding's reinvocationPolicy is kept as the API server spells
// it; left out, it is not set, so that the API server's default applies.
func TestReinvocationPolicy(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"reinvocationPolicy: IfNeeded", ReinvocationIfNeeded},
		{"reinvocationPolicy: Never", ReinvocationNever},
		{"", ""},
		{"reinvocationPolicy:", ""}, // YAML null: not set
	} {
		c := mustParse(t, "configVersion: v1\nkubernetesMutating:\n- name: defaults.example.com\n  "+tc.value+"\n")
		if got := c.Mutating[0].ReinvocationPolicy(); got != tc.want {
			t.Errorf("%q: ReinvocationPolicy() = %q, want %q", tc.value, got, tc.want)
		}
	}
}

// A reinvocationPolicy the API server would refuse is an error at load that
// names the hook, the binding and the field, and lists the values allowed;
// a validating binding has none.
func TestReinvocationPolicyProblems(t *testing.T) {
	for _, tc := range []struct {
		name, cfg string
		wants     []want
	}{
		{"lowercase", `{configVersion: v1, kubernetesMutating: [{name: defaults.example.com, reinvocationPolicy: ifNeeded}]}`, []want{
			{"kubernetesMutating[0].reinvocationPolicy", `binding "defaults.example.com": "ifNeeded" is not a reinvocation policy (did you mean "IfNeeded"?); use Never (`}}},
		{"unknown value", `{configVersion: v1, kubernetesMutating: [{name: a.b.c}, {name: d.e.f, reinvocationPolicy: Always}]}`, []want{
			{"kubernetesMutating[1].reinvocationPolicy", `binding "d.e.f": "Always" is not a reinvocation policy; use Never (the API server's default when the key is left out`}}},
		{"not a string", `{configVersion: v1, kubernetesMutating: [{name: a.b.c, reinvocationPolicy: true}]}`, []want{
			{"kubernetesMutating[0].reinvocationPolicy", "must be a string, not the boolean true"}}},
		{"validating", `{configVersion: v1, kubernetesValidating: [{name: a.b.c, reinvocationPolicy: IfNeeded}]}`, []want{
			{"kubernetesValidating[0].reinvocationPolicy", `binding "a.b.c": only kubernetesMutating bindings take a reinvocation policy`}}},
		{"misspelt key", `{configVersion: v1, kubernetesMutating: [{name: a.b.c, reinvokationPolicy: IfNeeded}]}`, []want{
			{"kubernetesMutating[0].reinvokationPolicy", `did you mean "reinvocationPolicy"?`}}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkProblems(t, tc.cfg, tc.wants...) })
	}

	errs := parseErrors(t, `{configVersion: v1, kubernetesMutating: [{name: a.b.c, reinvocationPolicy: ifneeded}]}`)
	want := `hook ` + testHook + `: kubernetesMutating[0].reinvocationPolicy: binding "a.b.c": "ifneeded" is not a reinvocation policy`
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), want) || !strings.Contains(errs[0].Error(), "use Never (") || !strings.Contains(errs[0].Error(), ") or IfNeeded (") {
		t.Errorf("the message: %v\nwant it to start %q and list Never and IfNeeded", errs, want)
	}
}
