package operator

import (
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/hook"
)

func TestTriggerBinding(t *testing.T) {
	one := &hook.Hook{Name: "one.sh", Config: hook.Config{Kubernetes: []hook.KubernetesBinding{{Common: hook.Common{Name: "pods"}}}}}
	two := &hook.Hook{Name: "two.sh", Config: hook.Config{
		Kubernetes: []hook.KubernetesBinding{{Common: hook.Common{Name: "pods"}}},
		Schedule:   []hook.ScheduleBinding{{Common: hook.Common{Name: "nightly"}}},
	}}
	startup := 1
	none := &hook.Hook{Name: "start.sh", Config: hook.Config{OnStartup: &startup}}
	for _, tc := range []struct {
		h          *hook.Hook
		name, want string
		err        string
	}{
		{one, "", "pods", ""},
		{one, "pods", "pods", ""},
		{two, "nightly", "nightly", ""},
		{two, "", "", "hook two.sh has several bindings; name one with --binding: pods, nightly"},
		{two, "nodes", "", `hook two.sh has no kubernetes or schedule binding "nodes"; its bindings are: pods, nightly`},
		{none, "", "", "hook start.sh has no kubernetes or schedule binding to trigger"},
	} {
		got, err := triggerBinding(tc.h, tc.name)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("triggerBinding(%s, %q) = %q, %v; want %q, error %q", tc.h.Name, tc.name, got, err, tc.want, tc.err)
		}
	}
}
