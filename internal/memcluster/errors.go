package memcluster

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The errors memcluster answers with are the API server's, so that callers'
// apierrors.IsNotFound, IsConflict and the like see them.

func notFound(gr schema.GroupResource, name string) error {
	return apierrors.NewNotFound(gr, name)
}

// noSubresource is the NotFound of a subresource memcluster does not serve.
func noSubresource(gr schema.GroupResource, sub, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: gr.Group, Resource: gr.Resource + "/" + sub}, name)
}

func alreadyExists(gr schema.GroupResource, name string) error {
	return apierrors.NewAlreadyExists(gr, name)
}

func conflict(gr schema.GroupResource, name, format string, args ...any) error {
	return apierrors.NewConflict(gr, name, fmt.Errorf(format, args...))
}

// staleVersion is the Conflict of a write based on an old resourceVersion,
// worded as the API server words it.
func staleVersion(gr schema.GroupResource, name string) error {
	return apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

func badRequest(gr schema.GroupResource, name, format string, args ...any) error {
	return statusError(http.StatusBadRequest, metav1.StatusReasonBadRequest, gr, name, fmt.Sprintf(format, args...))
}

func invalid(gr schema.GroupResource, name, format string, args ...any) error {
	return statusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, gr, name, fmt.Sprintf(format, args...))
}

func methodNotSupported(gr schema.GroupResource, format string, args ...any) error {
	return statusError(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, gr, "", fmt.Sprintf(format, args...))
}

// statusError builds an API error whose message names the resource and
// object, like `deployments.apps "web": reason`.
func statusError(code int32, reason metav1.StatusReason, gr schema.GroupResource, name, msg string) error {
	prefix := gr.String()
	if name != "" {
		prefix += fmt.Sprintf(" %q", name)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    code,
		Reason:  reason,
		Message: prefix + ": " + msg,
		Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: name},
	}}
}
