package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// webhookQueue labels the runs of admission requests, which wait in no queue.
const webhookQueue = "(webhook)"

// AnswerMargin is what an admission or conversion run leaves of the API
// server's wait for the answer to travel back to it.
const AnswerMargin = 500 * time.Millisecond

// AdmissionTimeout is how long a run of the hook of binding b may last,
// the hook's SIGTERM grace, kill and output grace included
// (run.Request.Within): its timeoutSeconds (10 by default) less
// AnswerMargin, so that the API server gets a denial that says why rather
// than a timeout of its own.
func AdmissionTimeout(b hook.WebhookBinding) time.Duration {
	seconds := int64(10)
	if n, ok := b.Raw["timeoutSeconds"].(int64); ok {
		seconds = n
	}
	return time.Duration(seconds)*time.Second - AnswerMargin
}

// AdmitError is why a hook gave no answer, in words that can be shown to
// the client.
type AdmitError struct {
	Msg string
	// TimedOut: the hook did not answer within the binding's timeout.
	TimedOut bool
}

// Error implements error: Msg.
func (e *AdmitError) Error() string { return e.Msg }

// Admit runs hook h for one admission request to its binding b, at once
// and outside the queues (the API server is waiting), and returns the
// hook's answer. The context is a Validating or Mutating one with the
// review and the snapshots the binding's group and includeSnapshotsFrom
// name. The whole run, the hook's stop included, ends within within (see
// AdmissionTimeout). Everything the hook wrote is checked
// before anything is used: the response, its metrics, and the object
// operations it may write besides, which are applied before the answer is
// given. An error says why there is no answer, in words that can be shown
// to the client: never the hook's output (its stderr, the API server's
// message about an operation it wrote), which goes to the log only. A
// panic while the request is handled is such an error too (see contain).
func (e *Executor) Admit(ctx context.Context, h *hook.Hook, b hook.WebhookBinding, mutating bool, review []byte, within time.Duration) (*webhook.AdmissionResponse, error) {
	typ := binding.TypeValidating
	if mutating {
		typ = binding.TypeMutating
	}
	data, err := e.snapshotContext(h, binding.Context{Binding: b.Name, Type: typ, Review: review}, b.Common)
	if err != nil {
		return nil, err
	}
	log := e.Log.WithFields(logrus.Fields{"hook": h.Name, "binding": b.Name, "type": typ})
	rep := Report{ID: e.runs.Add(1), Hook: h, Queue: webhookQueue, Bindings: b.Name, Contexts: data}
	ctx = context.WithValue(ctx, runIDKey{}, rep.ID)
	var resp *webhook.AdmissionResponse
	err = e.contain(h, "admission", func() (err error) {
		resp, err = e.admit(ctx, h, b, mutating, data, within, log, &rep)
		return err
	})
	if isPanic(err) {
		resp, err = nil, &AdmitError{Msg: fmt.Sprintf("hook %s, binding %s: %s", h.Name, b.Name, panicked)}
	}
	if e.Report != nil {
		rep.Err = err
		if err == nil {
			rep.Answer = resp
		}
		e.Report(rep)
	}
	return resp, err
}

func (e *Executor) admit(ctx context.Context, h *hook.Hook, b hook.WebhookBinding, mutating bool, data []byte, within time.Duration, log logrus.FieldLogger, rep *Report) (*webhook.AdmissionResponse, error) {
	res, err := e.runForRequest(ctx, h, b.Name, data, within, rep)
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		log.WithError(err).Warn("admission hook did not answer in time; the request is denied")
		return nil, &AdmitError{Msg: fmt.Sprintf("hook %s did not answer in time for binding %s: it was stopped so that its run ends within %s, before the API server gives up", h.Name, b.Name, within.Round(10*time.Millisecond)), TimedOut: true}
	case err != nil:
		log.WithError(err).Warn("admission hook failed; the request is denied")
		return nil, &AdmitError{Msg: fmt.Sprintf("hook %s failed for binding %s; the operator's log says why", h.Name, b.Name)}
	}
	resp, err := webhook.ParseAdmissionResponse(res.ValidatingResponse, mutating)
	if err != nil {
		log.WithError(err).Warn("admission hook wrote an invalid response; the request is denied")
		return nil, fmt.Errorf("hook %s, binding %s: invalid response in $VALIDATING_RESPONSE_PATH: %v", h.Name, b.Name, err)
	}
	if _, err := e.afterRun(ctx, h, res, rep, nil); err != nil {
		log.WithError(err).Warn("what the admission hook wrote besides its answer failed; the request is denied")
		return nil, &AdmitError{Msg: fmt.Sprintf("hook %s, binding %s: %s; the operator's log says why", h.Name, b.Name, PublicReason(err))}
	}
	log.WithFields(logrus.Fields{"allowed": resp.Allowed, "duration": res.Duration.Round(time.Millisecond).String()}).Info("admission hook answered")
	return resp, nil
}

// snapshotContext returns c with the snapshots of the bindings that group
// and includeSnapshotsFrom name, encoded as the hook's binding contexts,
// or an error when one of them has not listed: the hook would see it
// empty.
func (e *Executor) snapshotContext(h *hook.Hook, c binding.Context, common hook.Common) ([]byte, error) {
	if names := e.Unsynchronized(h, common); len(names) > 0 {
		return nil, fmt.Errorf("hook %s, binding %s: binding(s) %s, whose snapshots the hook gets, have not synchronized (is the kind served?), so the hook is not run; `hook-operator debug hooks` says why",
			h.Name, common.Name, strings.Join(names, ", "))
	}
	var from []string
	from = append(from, groupMembers(h, common.Group)...)
	from = append(from, common.IncludeSnapshotsFrom...)
	if len(from) > 0 {
		c = binding.Shape(c, "", nil, from)
	}
	contexts := []binding.Context{c}
	binding.FillSnapshots(contexts, func(name string) []binding.Object {
		if wb := e.Objects.Binding(h.Name, name); wb != nil {
			return wb.Snapshot()
		}
		return nil
	})
	data, err := binding.Encode(contexts)
	if err != nil {
		return nil, fmt.Errorf("hook %s: %w", h.Name, err)
	}
	return data, nil
}
