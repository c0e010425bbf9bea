package procs

import (
	"slices"
	"testing"
)

func TestSteadyEnv(t *testing.T) {
	for _, c := range []struct {
		name  string
		in    []string
		want  []string
		again bool
	}{
		{"no GODEBUG", []string{"A=1"}, []string{"A=1", "GODEBUG=schedtrace=2147483647"}, true},
		{"empty GODEBUG", []string{"GODEBUG=", "A=1"}, []string{"GODEBUG=schedtrace=2147483647", "A=1"}, true},
		{"other settings kept", []string{"GODEBUG=http2debug=1,gctrace=1"}, []string{"GODEBUG=http2debug=1,gctrace=1,schedtrace=2147483647"}, true},
		{"schedtrace set by the user", []string{"GODEBUG=schedtrace=1000", "A=1"}, []string{"GODEBUG=schedtrace=1000", "A=1"}, false},
		{"already added", []string{"GODEBUG=gctrace=1,schedtrace=2147483647"}, []string{"GODEBUG=gctrace=1,schedtrace=2147483647"}, false},
	} {
		got, again := steadyEnv(c.in)
		if again != c.again || !slices.Equal(got, c.want) {
			t.Errorf("%s: steadyEnv(%q) = %q, %v; want %q, %v", c.name, c.in, got, again, c.want, c.again)
		}
		// What SteadySysmon starts does not start again.
		if _, again := steadyEnv(got); again {
			t.Errorf("%s: steadyEnv would start %q again", c.name, got)
		}
	}
}

func TestHookEnvDropsTheSetting(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"A=1", "GODEBUG=schedtrace=2147483647"}, []string{"A=1"}},
		{[]string{"GODEBUG=http2debug=1,schedtrace=2147483647", "B=2"}, []string{"GODEBUG=http2debug=1", "B=2"}},
		{[]string{"GODEBUG=schedtrace=1000"}, []string{"GODEBUG=schedtrace=1000"}},
		{[]string{"A=1"}, []string{"A=1"}},
	} {
		if got := HookEnv(c.in); !slices.Equal(got, c.want) {
			t.Errorf("HookEnv(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Round trip: the hooks see the environment the operator was given.
	in := []string{"GODEBUG=gctrace=1", "A=1"}
	added, _ := steadyEnv(in)
	if got := HookEnv(added); !slices.Equal(got, in) {
		t.Errorf("HookEnv(steadyEnv(%q)) = %q", in, got)
	}
}
