package ops

import (
	"encoding/json"
	"testing"
)

func TestMergeStatus(t *testing.T) {
	tests := []struct{ name, current, patch, want string }{
		{"into nothing", `null`, `{"phase":"Ready"}`, `{"phase":"Ready"}`},
		{"adds and replaces", `{"phase":"Pending","count":1}`, `{"phase":"Ready","ready":true}`, `{"count":1,"phase":"Ready","ready":true}`},
		{"null deletes", `{"phase":"Ready","message":"x"}`, `{"message":null,"absent":null}`, `{"phase":"Ready"}`},
		{"nested objects merge", `{"db":{"host":"a","port":5432}}`, `{"db":{"host":"b","user":null}}`, `{"db":{"host":"b","port":5432}}`},
		{"nested null deletes", `{"db":{"host":"a","port":5432}}`, `{"db":{"port":null}}`, `{"db":{"host":"a"}}`},
		{"an object replaces a scalar, without its nulls", `{"db":"none"}`, `{"db":{"host":"b","port":null}}`, `{"db":{"host":"b"}}`},
		{"a scalar replaces an object", `{"db":{"host":"a"}}`, `{"db":"none"}`, `{"db":"none"}`},
		{"lists are replaced whole", `{"conditions":[{"type":"A"},{"type":"B"}]}`, `{"conditions":[{"type":"C"}]}`, `{"conditions":[{"type":"C"}]}`},
		{"empty patch", `{"phase":"Ready"}`, `{}`, `{"phase":"Ready"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var current, patch map[string]any
			if err := json.Unmarshal([]byte(tt.current), &current); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.patch), &patch); err != nil {
				t.Fatal(err)
			}
			before, _ := json.Marshal(current)
			patchBefore, _ := json.Marshal(patch)
			got, _ := json.Marshal(mergeStatus(current, patch))
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if after, _ := json.Marshal(current); string(after) != string(before) {
				t.Errorf("current changed from %s to %s", before, after)
			}
			if after, _ := json.Marshal(patch); string(after) != string(patchBefore) {
				t.Errorf("patch changed from %s to %s", patchBefore, after)
			}
		})
	}
}

func TestMergeStatusSharesNothingWithThePatch(t *testing.T) {
	patch := map[string]any{"db": map[string]any{"hosts": []any{"a"}}}
	got := mergeStatus(nil, patch)
	got["db"].(map[string]any)["hosts"].([]any)[0] = "changed"
	if patch["db"].(map[string]any)["hosts"].([]any)[0] != "a" {
		t.Error("changing the result changed the patch")
	}
}

func TestSameJSON(t *testing.T) {
	tests := []struct {
		a, b map[string]any
		want bool
	}{
		{nil, map[string]any{}, true},
		{map[string]any{"n": int64(1)}, map[string]any{"n": float64(1)}, true},
		{map[string]any{"n": int64(1)}, map[string]any{"n": int64(2)}, false},
		{map[string]any{"a": "x", "b": "y"}, map[string]any{"b": "y", "a": "x"}, true},
		{map[string]any{"a": nil}, map[string]any{}, false},
		{nil, map[string]any{"observedGeneration": int64(1)}, false},
	}
	for _, tt := range tests {
		if got := sameJSON(tt.a, tt.b); got != tt.want {
			t.Errorf("sameJSON(%v, %v) = %v", tt.a, tt.b, got)
		}
	}
}
