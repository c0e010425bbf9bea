package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// ConversionTimeout is how long a conversion request may take in all,
// every step of its chain included: the API server waits 30 s for a
// conversion webhook, and a failure that says why is better than its
// timeout. It is also how long one step may take when no request's
// deadline is nearer (replay).
const ConversionTimeout = 29 * time.Second

// Convert runs hook h for one step of a conversion, its binding b's rule,
// at once and outside the queues (the API server is waiting), and returns
// the objects the hook made of req's objects, one for each in the same
// order. The context is a Conversion one with the rule, the review (the
// objects as the step before left them) and the snapshots of the binding's
// group and includeSnapshotsFrom. The whole run, the hook's stop included,
// ends within within. Everything
// the hook wrote is checked before anything is used, and the object
// operations and metrics it may write besides are applied as for any run.
// A *webhook.ConversionFailure says why there is no conversion, in words
// that can be shown to the client: the hook's failedMessage, or that it
// failed, timed out or answered badly, or that the operator failed (a
// recovered panic, see contain); the details go to the log.
func (e *Executor) Convert(ctx context.Context, h *hook.Hook, b hook.ConversionBinding, rule hook.ConversionRule, req webhook.ConversionRequest, within time.Duration) ([]json.RawMessage, error) {
	review, err := json.Marshal(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": req})
	if err != nil {
		return nil, err
	}
	data, err := e.snapshotContext(h, binding.Context{Binding: b.Name, Type: binding.TypeConversion,
		FromVersion: rule.FromVersion, ToVersion: rule.ToVersion, Review: review}, b.Common)
	if err != nil {
		return nil, err
	}
	log := e.Log.WithFields(logrus.Fields{"hook": h.Name, "binding": b.Name, "type": binding.TypeConversion, "crd": b.CRDName,
		"rule": rule.FromVersion + " -> " + rule.ToVersion, "objects": len(req.Objects)})
	rep := Report{ID: e.runs.Add(1), Hook: h, Queue: webhookQueue, Bindings: b.Name, Contexts: data}
	ctx = context.WithValue(ctx, runIDKey{}, rep.ID)
	var objects []json.RawMessage
	var resp *webhook.ConversionResponse
	err = e.contain(h, "conversion", func() (err error) {
		objects, resp, err = e.convert(ctx, h, b, rule, req, data, within, log, &rep)
		return err
	})
	if isPanic(err) {
		objects, resp, err = nil, nil, &ConvertError{Msg: fmt.Sprintf("hook %s, binding %s: %s", h.Name, b.Name, panicked)}
	}
	if e.Report != nil {
		rep.Err = err
		if resp != nil {
			rep.Answer = resp
		}
		e.Report(rep)
	}
	return objects, err
}

func (e *Executor) convert(ctx context.Context, h *hook.Hook, b hook.ConversionBinding, rule hook.ConversionRule, req webhook.ConversionRequest, data []byte, within time.Duration, log logrus.FieldLogger, rep *Report) ([]json.RawMessage, *webhook.ConversionResponse, error) {
	res, err := e.runForRequest(ctx, h, b.Name, data, within, rep)
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		log.WithError(err).Warn("conversion hook did not answer in time; the conversion fails")
		return nil, nil, &ConvertError{Msg: fmt.Sprintf("hook %s did not convert %s to %s within %s", h.Name, b.CRDName, rule.ToVersion, within.Round(10*time.Millisecond)), TimedOut: true}
	case err != nil:
		log.WithError(err).Warn("conversion hook failed; the conversion fails")
		return nil, nil, &ConvertError{Msg: fmt.Sprintf("hook %s failed to convert %s to %s; the operator's log says why", h.Name, b.CRDName, rule.ToVersion)}
	}
	resp, err := webhook.ParseConversionResponse(res.ConversionResponse, len(req.Objects))
	if err != nil {
		log.WithError(err).Warn("conversion hook wrote an invalid response; the conversion fails")
		return nil, nil, &ConvertError{Msg: fmt.Sprintf("hook %s, binding %s: invalid response in $CONVERSION_RESPONSE_PATH: %v", h.Name, b.Name, err)}
	}
	if _, err := e.afterRun(ctx, h, res, rep, nil); err != nil {
		log.WithError(err).Warn("what the conversion hook wrote besides its answer failed; the conversion fails")
		return nil, nil, &ConvertError{Msg: fmt.Sprintf("hook %s, binding %s: %s; the operator's log says why", h.Name, b.Name, PublicReason(err))}
	}
	if resp.FailedMessage != "" {
		log.WithField("message", resp.FailedMessage).Info("conversion hook refused the conversion")
		return nil, resp, &ConvertError{Msg: resp.FailedMessage, Refused: true}
	}
	log.WithField("duration", res.Duration.Round(time.Millisecond).String()).Info("conversion hook answered")
	return resp.ConvertedObjects, resp, nil
}

// ConvertError is why a conversion step gave no objects, in words that can
// be shown to the client.
type ConvertError struct {
	Msg string
	// TimedOut: the hook did not answer within the time left.
	TimedOut bool
	// Refused: the hook answered with a failedMessage.
	Refused bool
}

// Error implements error: Msg.
func (e *ConvertError) Error() string { return e.Msg }
