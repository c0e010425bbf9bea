package ops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// maxFieldManager is the longest field manager the API server accepts.
const maxFieldManager = 128

// FieldManagerFor returns the field manager under which Apply and ApplySet
// write for the hook hookName: the Applier's field manager, "/", and the
// hook's name ("hook-operator/db/sampledb.sh"), or the Applier's field
// manager alone for an empty hookName. A name too long for the API server
// is cut and ends with a hash of the whole name, so it stays the same
// from run to run and differs from hook to hook.
func (a *Applier) FieldManagerFor(hookName string) string {
	m := a.fieldManager()
	if hookName == "" {
		return m
	}
	m += "/" + hookName
	if len(m) <= maxFieldManager {
		return m
	}
	sum := sha256.Sum256([]byte(m))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	cut := maxFieldManager - len(suffix)
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + suffix
}

// serverSideApply applies Apply.
func (a *Applier) serverSideApply(ctx context.Context, s step, hookName string) error {
	obj := s.obj.DeepCopy()
	if s.parent != nil {
		parent, err := a.getParent(ctx, *s.parent)
		if err != nil {
			return err
		}
		if err := setController(obj, parent); err != nil {
			return err
		}
	}
	if err := a.serverSide(ctx, a.client(s), obj, s.op.Force, hookName); err != nil {
		return err
	}
	a.log(s).Debug("applied")
	return nil
}

// serverSide writes obj with server-side apply: the object gets the
// fields obj sets, and loses those the hook's field manager set before and
// obj no longer does.
func (a *Applier) serverSide(ctx context.Context, c dynamic.ResourceInterface, obj *unstructured.Unstructured, force bool, hookName string) error {
	data, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = c.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: a.FieldManagerFor(hookName), Force: &force})
	if apierrors.IsConflict(err) {
		return conflictError(err)
	}
	return err
}

// conflict is an apply conflict, explained.
type conflict struct {
	msg string
	err error
}

func (c *conflict) Error() string { return c.msg }

// Unwrap returns the API error, so apierrors.IsConflict sees it.
func (c *conflict) Unwrap() error { return c.err }

// conflictError explains an apply conflict: the fields, who owns them, and
// how to take them over.
func conflictError(err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return err
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		// The cause's message reads `conflict with "manager" using v1`.
		owner := strings.TrimPrefix(c.Message, "conflict with ")
		fields = append(fields, fmt.Sprintf("%s (owned by %s)", c.Field, owner))
	}
	if len(fields) == 0 {
		return err
	}
	return &conflict{
		msg: fmt.Sprintf("conflict: other field managers own fields this object sets: %s; set force: true to take them over, or stop setting them",
			strings.Join(fields, ", ")),
		err: err,
	}
}
