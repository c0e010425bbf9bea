package webhook

import (
	"testing"
)

// A mutating binding's reinvocationPolicy reaches its webhook as given; a
// binding without one leaves the field out, so that the API server's
// default (Never) applies; a validating configuration never carries it.
func TestConfigurationReinvocationPolicy(t *testing.T) {
	rules := "\nrules:\n- {apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: [CREATE]}\n"
	ifNeeded := admission(t, "defaults.sh", "name: defaults.example.com\nreinvocationPolicy: IfNeeded"+rules)
	never := admission(t, "defaults.sh", "name: never.example.com\nreinvocationPolicy: Never"+rules)
	unset := admission(t, "labels.sh", "name: labels.example.com"+rules)
	reg := Registration{Name: "shell-operator-hooks", URL: "https://127.0.0.1:9680"}

	u, err := reg.Configuration(true, []Admission{ifNeeded, never, unset})
	if err != nil {
		t.Fatal(err)
	}
	webhooks := u.Object["webhooks"].([]any)
	for i, want := range []any{"IfNeeded", "Never", nil} {
		w := webhooks[i].(map[string]any)
		if got := w["reinvocationPolicy"]; got != want {
			t.Errorf("webhook %s: reinvocationPolicy %v, want %v", w["name"], got, want)
		}
	}

	// A binding can only have it when mutating (the hook's configuration
	// is checked at load); a validating configuration built from one
	// still leaves it out, as the API server's ValidatingWebhook has none.
	u, err = reg.Configuration(false, []Admission{ifNeeded})
	if err != nil {
		t.Fatal(err)
	}
	if w := u.Object["webhooks"].([]any)[0].(map[string]any); w["reinvocationPolicy"] != nil {
		t.Errorf("validating webhook has reinvocationPolicy %v", w["reinvocationPolicy"])
	}
}
