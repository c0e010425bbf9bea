package kube

import (
	"runtime"
	"testing"
	"weak"
)

// The built-in kinds' index and lists are shared while someone holds them
// and let go after: an operator does not keep them once its hooks have
// loaded.
func TestBuiltinKindsLetGo(t *testing.T) {
	a := NewBuiltinKinds()
	if b := NewBuiltinKinds(); a != b {
		t.Fatal("two holders at once got two indexes; want one shared")
	}
	if p := a.Check("v1", "Namespce"); p == nil || p.Field != "kind" {
		t.Fatalf("Check(v1, Namespce) = %+v; want a kind problem", p)
	}
	index, lists := weak.Make(a), weak.Make(builtin())
	a = nil
	runtime.GC()
	runtime.GC()
	if index.Value() != nil {
		t.Error("the index outlived its last holder")
	}
	if lists.Value() != nil {
		t.Error("the decoded built-in lists outlived their last holder")
	}
	if p := NewBuiltinKinds().Check("v1", "ConfigMap"); p != nil {
		t.Errorf("after a rebuild, Check(v1, ConfigMap) = %+v; want nil", p)
	}
}
