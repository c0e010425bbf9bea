package hook

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hook-operator/hook-operator/internal/jq"
)

// Durations are written as Go duration strings ("30s", "1h0m0s") rather
// than nanoseconds, and sizes as quantities ("512Mi") rather than bytes, so
// that `hooks list -o json` reads like the hook's own configuration and can
// be read back.

// MarshalJSON writes the durations and sizes as strings.
func (s Settings) MarshalJSON() ([]byte, error) {
	type fields Settings
	mem := ""
	if s.ResidentMaxMemory != 0 {
		mem = resource.NewQuantity(s.ResidentMaxMemory, resource.BinarySI).String()
	}
	return json.Marshal(struct {
		fields
		ExecutionMinInterval string `json:"executionMinInterval,omitempty"`
		Timeout              string `json:"timeout,omitempty"`
		ResidentMaxMemory    string `json:"residentMaxMemory,omitempty"`
		StaleAfter           string `json:"staleAfter,omitempty"`
	}{fields(s), durationString(s.ExecutionMinInterval), durationString(s.Timeout), mem, durationString(s.StaleAfter)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Settings) UnmarshalJSON(data []byte) error {
	type fields Settings
	var aux struct {
		fields
		ExecutionMinInterval string `json:"executionMinInterval,omitempty"`
		Timeout              string `json:"timeout,omitempty"`
		ResidentMaxMemory    string `json:"residentMaxMemory,omitempty"`
		StaleAfter           string `json:"staleAfter,omitempty"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*s = Settings(aux.fields)
	if aux.ResidentMaxMemory != "" {
		q, err := resource.ParseQuantity(aux.ResidentMaxMemory)
		if err != nil {
			return fmt.Errorf("residentMaxMemory: %q is not a size such as \"256Mi\"", aux.ResidentMaxMemory)
		}
		s.ResidentMaxMemory = q.Value()
	}
	var err error
	if s.ExecutionMinInterval, err = parseDuration("executionMinInterval", aux.ExecutionMinInterval); err != nil {
		return err
	}
	if s.Timeout, err = parseDuration("timeout", aux.Timeout); err != nil {
		return err
	}
	s.StaleAfter, err = parseDuration("staleAfter", aux.StaleAfter)
	return err
}

// MarshalJSON writes resynchronizationPeriod as a duration string.
func (b KubernetesBinding) MarshalJSON() ([]byte, error) {
	type fields KubernetesBinding
	return json.Marshal(struct {
		fields
		ResynchronizationPeriod string `json:"resynchronizationPeriod,omitempty"`
		StaleAfter              string `json:"staleAfter,omitempty"`
	}{fields(b), durationString(b.ResynchronizationPeriod), durationString(b.StaleAfter)})
}

// UnmarshalJSON reads what MarshalJSON writes, and compiles the jqFilter
// into Filter.
func (b *KubernetesBinding) UnmarshalJSON(data []byte) error {
	type fields KubernetesBinding
	var aux struct {
		fields
		ResynchronizationPeriod string `json:"resynchronizationPeriod,omitempty"`
		StaleAfter              string `json:"staleAfter,omitempty"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*b = KubernetesBinding(aux.fields)
	var err error
	if b.ResynchronizationPeriod, err = parseDuration("resynchronizationPeriod", aux.ResynchronizationPeriod); err != nil {
		return err
	}
	if b.StaleAfter, err = parseDuration("staleAfter", aux.StaleAfter); err != nil {
		return err
	}
	b.Filter = nil
	if b.JQFilter != "" {
		if b.Filter, err = jq.Compile(b.JQFilter); err != nil {
			return fmt.Errorf("jqFilter: %w", err)
		}
	}
	return nil
}

func durationString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func parseDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return d, nil
}
