// Package applyset holds how an ApplySet (the operation of internal/ops)
// is marked in the cluster: the label every object of a set carries, the
// inventory annotation on the set's parent, and the set's id. An ApplySet's
// state lives in the cluster, so that an operator that restarts still
// knows what to prune: every object of the set carries Label, and the
// parent carries the set's inventory, the annotation InventoryAnnotation(id),
// listing the kinds the set may have objects of.
//
// internal/ops writes and prunes the sets; internal/watch reads the marks
// to tell a write of the inventory alone from a change of the parent. It
// imports no package of the operator's.
package applyset

import (
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/types"
)

const (
	// Label is the label every object of an ApplySet carries; its value
	// is the set's id (see ID). Pruning only ever deletes objects that
	// carry it.
	Label = "applyset.hook-operator.dev/id"
	// InventoryPrefix starts the key of a parent's inventory annotations.
	InventoryPrefix = "applyset.hook-operator.dev/"
	// MaxName is the longest name of a set: it leaves room in the id, a
	// label value of at most 63 characters, for a hash.
	MaxName = 40
)

// ID returns the id of the ApplySet setName of the hook hookName for the
// parent with the given UID: the set's name, "-", and 20 hex digits of a
// hash of all three, so that sets of other hooks, other parents, or an
// earlier parent of the same name never share an id.
func ID(hookName, setName string, parentUID types.UID) string {
	sum := sha256.Sum256([]byte(hookName + "\x00" + setName + "\x00" + string(parentUID)))
	return setName + "-" + hex.EncodeToString(sum[:])[:20]
}

// InventoryAnnotation returns the key of the parent's annotation holding
// the inventory of the set with the given id. Its value is the sorted,
// comma-separated list of the kinds the set may have objects of, each as
// apiVersion/Kind ("apps/v1/Deployment,v1/ConfigMap").
func InventoryAnnotation(id string) string { return InventoryPrefix + id }
