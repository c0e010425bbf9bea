package memcluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// The metadata the API server sets. Everything here comes from counters and
// Options.Now, never from randomness, so that replays are reproducible.

// nextVersion returns a new resourceVersion, greater than all before.
func (c *Cluster) nextVersion() string {
	c.version++
	return strconv.FormatUint(c.version, 10)
}

// noteVersion keeps the counter at or above rv, an object's
// resourceVersion from elsewhere (a fixture, the live cluster), so that
// the object's next version is greater, as clients may compare them.
func (c *Cluster) noteVersion(rv string) {
	if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n > c.version {
		c.version = n
	}
}

// newUID returns a new uid in UUID syntax (version 4, RFC 4122 variant).
func (c *Cluster) newUID() types.UID {
	c.uids++
	return types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", c.uids))
}

// nameAlphabet is the API server's alphabet for generated names: no vowels,
// so no words, and no characters that look alike.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

const (
	nameSuffixLen = 5
	// maxGenerateName leaves room for the suffix in a 63-character name.
	maxGenerateName = 63 - nameSuffixLen
)

// generateName returns base followed by a new suffix.
func (c *Cluster) generateName(base string) string {
	if len(base) > maxGenerateName {
		base = base[:maxGenerateName]
	}
	c.names++
	n := c.names
	suffix := make([]byte, nameSuffixLen)
	for i := nameSuffixLen - 1; i >= 0; i-- {
		suffix[i] = nameAlphabet[n%uint64(len(nameAlphabet))]
		n /= uint64(len(nameAlphabet))
	}
	return base + string(suffix)
}

// timestamp is Options.Now as the API server writes times: UTC, in
// seconds.
func (c *Cluster) timestamp() metav1.Time {
	return metav1.NewTime(c.now().UTC().Truncate(time.Second))
}

// serverFields are the metadata fields a write cannot change: they stay as
// the API server set them.
var serverFields = []string{"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"}

// keepServerFields copies serverFields from cur to next, and cur's
// apiVersion and kind where next lacks them.
func keepServerFields(cur, next *unstructured.Unstructured) {
	for _, f := range serverFields {
		v, found, _ := unstructured.NestedFieldNoCopy(cur.Object, "metadata", f)
		if found {
			_ = unstructured.SetNestedField(next.Object, v, "metadata", f)
		} else {
			unstructured.RemoveNestedField(next.Object, "metadata", f)
		}
	}
	if next.GetAPIVersion() == "" {
		next.SetAPIVersion(cur.GetAPIVersion())
	}
	if next.GetKind() == "" {
		next.SetKind(cur.GetKind())
	}
}

// setGeneration gives next the generation cur has, one more when next
// changes anything outside metadata and status. An object without a
// generation (of a kind that has none) keeps none.
func setGeneration(cur, next *unstructured.Unstructured) {
	g := cur.GetGeneration()
	if g == 0 {
		unstructured.RemoveNestedField(next.Object, "metadata", "generation")
		return
	}
	if !sameJSON(withoutMetaStatus(cur), withoutMetaStatus(next)) {
		g++
	}
	next.SetGeneration(g)
}

// withoutMetaStatus returns the top-level fields of obj but metadata and
// status: what metadata.generation counts changes of.
func withoutMetaStatus(obj *unstructured.Unstructured) map[string]any {
	m := make(map[string]any, len(obj.Object))
	for k, v := range obj.Object {
		if k != "metadata" && k != "status" {
			m[k] = v
		}
	}
	return m
}

// sameJSON tells whether two values encode to the same JSON, so that an
// int64 1 and a float64 1 are equal (encoding/json sorts map keys).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// hasGeneration tells whether the API server keeps metadata.generation for
// o: custom resources always have one; built-in kinds have one when they
// have a spec (Deployments, Pods), and none otherwise (ConfigMaps, Secrets).
func hasGeneration(gvr schema.GroupVersionResource, o *unstructured.Unstructured) bool {
	g := gvr.Group
	builtin := !strings.Contains(g, ".") || strings.HasSuffix(g, ".k8s.io")
	if !builtin {
		return true
	}
	_, spec := o.Object["spec"]
	return spec
}
