package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// conversionBudget is how long a conversion request may take in all, every
// step of its chain included: the API server waits 30 s for a conversion
// webhook, and a failure that says why is better than its timeout.
const conversionBudget = 29 * time.Second

// conversionTarget is the hook and binding that declared a rule.
type conversionTarget struct {
	hook    *hook.Hook
	binding hook.ConversionBinding
	rule    hook.ConversionRule
}

// conversionCRD is what the hooks declare for one CRD: its rules, in the
// order of the hooks and bindings, and who declared each.
type conversionCRD struct {
	rules   []webhook.ConversionRule
	targets map[webhook.ConversionRule]conversionTarget
}

// conversions collects the hooks' conversion rules by CRD. Two bindings
// that declare the same rule for a CRD are an error: which one runs would
// be a matter of chance.
func (o *Operator) conversions() (map[string]*conversionCRD, error) {
	crds := map[string]*conversionCRD{}
	for _, h := range o.current() {
		for _, b := range h.Config.Conversion {
			c := crds[b.CRDName]
			if c == nil {
				c = &conversionCRD{targets: map[webhook.ConversionRule]conversionTarget{}}
				crds[b.CRDName] = c
			}
			for _, r := range b.Conversions {
				wr := webhook.ConversionRule{From: r.FromVersion, To: r.ToVersion}
				if prev, ok := c.targets[wr]; ok {
					return nil, fmt.Errorf("hook %s, kubernetesCustomResourceConversion %s: the conversion %s of %s is declared by hook %s, binding %s too; declare each conversion of a CRD once",
						h.Name, b.Name, wr, b.CRDName, prev.hook.Name, prev.binding.Name)
				}
				c.targets[wr] = conversionTarget{hook: h, binding: b, rule: r}
				c.rules = append(c.rules, wr)
			}
		}
	}
	return crds, nil
}

// ConversionCRDs returns the names of the CRDs the hooks convert, sorted.
func (o *Operator) ConversionCRDs() []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range o.current() {
		for _, b := range h.Config.Conversion {
			if !seen[b.CRDName] {
				seen[b.CRDName] = true
				out = append(out, b.CRDName)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ConversionHandler returns the handler of the ConversionReview requests
// for the CRDs the hooks convert, each at /<CRD name>, or nil when no hook
// has a conversion binding; an error when two bindings declare the same
// conversion. A request takes one of the webhook slots (shared with the
// admission requests, at most max at once) for all the steps of its chain,
// which must end within conversionBudget. A failed conversion is recorded
// as an Event on the CRD.
func (o *Operator) ConversionHandler(max int) (http.Handler, error) {
	crds, err := o.conversions()
	if err != nil {
		return nil, err
	}
	if len(crds) == 0 {
		return nil, nil
	}
	slots := o.webhookSlots(max)
	convert := func(ctx context.Context, crd string, req webhook.ConversionRequest) ([]json.RawMessage, error) {
		start := time.Now()
		c := crds[crd]
		if c == nil {
			return nil, fmt.Errorf("no hook converts %s: no kubernetesCustomResourceConversion binding names it", crd)
		}
		ctx, cancel := context.WithDeadline(ctx, start.Add(conversionBudget))
		defer cancel()
		var last conversionTarget
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		case <-ctx.Done():
			o.opts.Metrics.Admission("", "", "conversion", "error", http.StatusInternalServerError, time.Since(start), false)
			return nil, fmt.Errorf("%s: every one of the %d webhook slots stayed busy until the API server gave up", crd, cap(slots))
		}
		objects, err := webhook.Convert(ctx, crd, c.rules, req, func(ctx context.Context, crd string, rule webhook.ConversionRule, req webhook.ConversionRequest) ([]json.RawMessage, error) {
			last = c.targets[rule]
			// The step's run, its stop included, ends before the request's
			// deadline, with time left to answer.
			within := answerMargin
			if d, ok := ctx.Deadline(); ok {
				within = time.Until(d) - answerMargin
			}
			if within <= 0 {
				return nil, &ConvertError{Msg: fmt.Sprintf("no time was left for the step %s of the conversion of %s", rule, crd), TimedOut: true}
			}
			return o.exec.Convert(ctx, last.hook, last.binding, last.rule, req, within)
		})
		hookName, bindingName := "", ""
		if last.hook != nil {
			hookName, bindingName = last.hook.Name, last.binding.Name
		}
		result, code := "converted", http.StatusOK
		var ce *ConvertError
		var cf *webhook.ConversionFailure
		switch {
		case err == nil:
		case errors.As(err, &ce) && ce.Refused, errors.As(err, &cf):
			result, code = "refused", http.StatusUnprocessableEntity
		default:
			result, code = "error", http.StatusInternalServerError
		}
		o.opts.Metrics.Admission(hookName, bindingName, "conversion", result, code, time.Since(start), errors.As(err, &ce) && ce.TimedOut)
		if err != nil {
			o.conversionFailed(crd, req, err)
		}
		return objects, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		webhook.ServeConversion(w, r, convert, func(err error, crd string) {
			o.log.WithError(err).WithField("crd", crd).Warn("conversion failed")
		})
	}), nil
}

// webhookSlots returns the slots that admission and conversion requests
// share: at most max of them run hooks at once.
func (o *Operator) webhookSlots(max int) chan struct{} {
	o.slotsOnce.Do(func() {
		if max < 1 {
			max = 1
		}
		o.slots = make(chan struct{}, max)
	})
	return o.slots
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// conversionFailed records a Warning Event on the CRD crd about a failed
// conversion (the Event recorder folds repeats into one).
func (o *Operator) conversionFailed(crd string, req webhook.ConversionRequest, err error) {
	if o.events == nil {
		return
	}
	ref := objectRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd, UID: o.crdUIDs.get(crd, func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		u, err := o.dyn.Resource(crdGVR).Get(ctx, crd, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return string(u.GetUID()), nil
	})}
	o.events.record(ref, "ConversionFailed", fmt.Sprintf("conversion of %d object(s) to %s failed: %v", len(req.Objects), req.DesiredAPIVersion, err))
}

// uidCache remembers the uids of CRDs, read once each.
type uidCache struct {
	mu   sync.Mutex
	uids map[string]string
}

func (c *uidCache) get(name string, read func() (string, error)) types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	if uid, ok := c.uids[name]; ok {
		return types.UID(uid)
	}
	uid, err := read()
	if err != nil {
		return ""
	}
	if c.uids == nil {
		c.uids = map[string]string{}
	}
	c.uids[name] = uid
	return types.UID(uid)
}
