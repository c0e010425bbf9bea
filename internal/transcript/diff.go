package transcript

import (
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/memcluster"
	"github.com/hook-operator/hook-operator/internal/redact"
)

// FromMemory turns the changes of an in-memory cluster into Changes with
// diffs. Diffs leave out what changes on every write (resourceVersion,
// managedFields), and Secret data unless opts.ShowSecrets.
func FromMemory(changes []memcluster.Change, opts Options) []Change {
	out := make([]Change, 0, len(changes))
	for _, c := range changes {
		obj := c.New
		if obj == nil {
			obj = c.Old
		}
		ch := Change{Object: ObjectName(obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace(), obj.GetName())}
		switch c.Type {
		case "Added":
			ch.Action = "Created"
			ch.Diff = Diff(nil, c.New, opts)
		case "Deleted":
			ch.Action = "Deleted"
		default:
			ch.Action = "Updated"
			ch.Diff = Diff(c.Old, c.New, opts)
		}
		out = append(out, ch)
	}
	return out
}

// Diff is the unified diff between two versions of an object as YAML
// (either may be nil).
func Diff(old, cur *unstructured.Unstructured, opts Options) string {
	a, b := render(old, opts), render(cur, opts)
	if a == b {
		return ""
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: "before", ToFile: "after", Context: 3,
	})
	if err != nil {
		return err.Error()
	}
	return text
}

func render(u *unstructured.Unstructured, opts Options) string {
	if u == nil {
		return ""
	}
	obj := u.DeepCopy()
	unstructured.RemoveNestedField(obj.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
	var v any = obj.Object
	if !opts.ShowSecrets {
		v = redact.Value(v)
	}
	data, err := yaml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return strings.TrimRight(string(data), "\n") + "\n"
}
