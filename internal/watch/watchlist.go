package watch

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/hook-operator/hook-operator/internal/kube"
)

// watchLists records whether the API server serves streaming lists: a
// watch with sendInitialEvents=true that sends the current objects, then
// the changes (the WatchList feature: on by default in Kubernetes 1.32 and
// from 1.34 on, off in 1.31 and 1.33). client-go's reflector asks for one
// first and, refused, lists and then watches. A server without the feature
// refuses with 422 Invalid on sendInitialEvents.
//
// The first refusal is logged once, with the server's version, and is not a
// failed watch (no warning per informer, no watch error counted, the
// informer not marked broken). From then on no informer asks again: those
// started later are built without streaming lists, and those that were
// already running list when they relist, without a request refused.
type watchLists struct {
	refused atomic.Bool
	clients *kube.Clients
	log     logrus.FieldLogger
}

// errNoStreamingLists answers a streaming-list watch once the server has
// refused one: the reflector then lists instead.
var errNoStreamingLists = errors.New("the API server does not serve streaming lists (WatchList)")

// unsupported reports whether the server has refused a streaming list.
func (l *watchLists) unsupported() bool { return l != nil && l.refused.Load() }

// streaming reports whether opts ask for a streaming list.
func streaming(opts metav1.ListOptions) bool {
	return opts.SendInitialEvents != nil && *opts.SendInitialEvents
}

// refusal reports whether err is the API server refusing a streaming list,
// and if so records it (logging the first).
func (l *watchLists) refusal(ctx context.Context, opts metav1.ListOptions, err error) bool {
	if l == nil || !streaming(opts) || !refusesStreamingList(err) {
		return false
	}
	if l.refused.Swap(true) {
		return true // logged by the first
	}
	fields := logrus.Fields{"feature": "WatchList"}
	if l.clients != nil {
		vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if v, verr := l.clients.ServerVersion(vctx); verr == nil {
			fields["serverVersion"] = v.String()
		}
		cancel()
	}
	// The error itself is left out: its text ("sendInitialEvents is
	// forbidden") reads like a refusal by RBAC, which it is not.
	fields["code"] = http.StatusUnprocessableEntity
	l.log.WithFields(fields).Info("the API server does not serve streaming lists (WatchList); informers list, then watch, instead")
	return true
}

// refusesStreamingList reports whether err is a 422 about sendInitialEvents,
// which an API server without the WatchList feature answers.
func refusesStreamingList(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Field == "sendInitialEvents" {
				return true
			}
		}
	}
	return strings.Contains(status.Status().Message, "sendInitialEvents")
}

// noStreamingLists is an informer's ListerWatcher once the server has
// refused a streaming list: client-go's reflector then never asks for one
// (watchlist.DoesClientNotSupportWatchListSemantics).
type noStreamingLists struct{ *cache.ListWatch }

func (noStreamingLists) IsWatchListSemanticsUnSupported() bool { return true }
