package hook

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestConfigJSONRoundTrip(t *testing.T) {
	c := mustParse(t, fullYAML)
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"resynchronizationPeriod":"10m0s"`, `"executionMinInterval":"5s"`, `"timeout":"2m0s"`, `"staleAfter":"10m0s"`, `"staleAfter":"1m30s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s (durations must be strings):\n%s", want, b)
		}
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if f := back.Kubernetes[0].Filter; f == nil || f.String() != c.Kubernetes[0].JQFilter {
		t.Errorf("jqFilter not compiled on the way back: %v", f)
	}
	for i := range c.Kubernetes {
		c.Kubernetes[i].Filter, back.Kubernetes[i].Filter = nil, nil
	}
	// Admission bindings keep their raw fields as decoded JSON.
	for i := range c.Validating {
		c.Validating[i].Raw, back.Validating[i].Raw = nil, nil
	}
	for i := range c.Mutating {
		c.Mutating[i].Raw, back.Mutating[i].Raw = nil, nil
	}
	if !reflect.DeepEqual(c, back) {
		t.Errorf("round trip changed the config:\n%+v\n%+v", c, back)
	}

	var s Settings
	if err := json.Unmarshal([]byte(`{"timeout":"soon"}`), &s); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("bad duration: error %v, want one naming timeout", err)
	}
}
