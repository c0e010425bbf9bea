package kube

import (
	"strings"
	"testing"
)

func TestCheckBuiltinKind(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		field, want      string // want: part of the reason; "" means no problem
	}{
		{"", "Namespace", "", ""},
		{"", "namespaces", "", ""},
		{"", "ns", "", ""},
		{"v1", "ConfigMap", "", ""},
		{"apps/v1", "Deployment", "", ""},
		{"", "Namespce", "kind", "did you mean Namespace?"},
		{"v1", "Namespce", "kind", "did you mean Namespace?"},
		{"", "Deploymnet", "kind", "did you mean Deployment?"},
		{"apps/v1", "ConfigMap", "apiVersion", "ConfigMap is a kind of apiVersion v1, not of apps/v1; set apiVersion: v1"},
		{"v1", "Deployment", "apiVersion", "set apiVersion: apps/v1"},
		// Custom resources: a group that is not built-in, or a name far
		// from every built-in kind.
		{"example.com/v1", "Namespce", "", ""},
		{"stable.example.com/v1", "CronTab", "", ""},
		{"", "Widget", "", ""},
		{"", "Policy", "", ""},
		{"", "", "", ""},
	} {
		p := NewBuiltinKinds().Check(tc.apiVersion, tc.kind)
		switch {
		case tc.want == "" && p != nil:
			t.Errorf("%s %s: %+v, want no problem", tc.apiVersion, tc.kind, p)
		case tc.want != "" && (p == nil || p.Field != tc.field || !strings.Contains(p.Reason, tc.want)):
			t.Errorf("%s %s: %+v, want field %s saying %q", tc.apiVersion, tc.kind, p, tc.field, tc.want)
		}
	}
}
