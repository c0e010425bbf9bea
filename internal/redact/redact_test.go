package redact_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/redact"
)

// decode decodes JSON as the commands do, numbers kept exact.
func decode(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("fixture: %v\n%s", err, s)
	}
	return v
}

// same reports whether two JSON documents are equal, ignoring layout.
func same(t *testing.T, got any, want string) {
	t.Helper()
	if w := decode(t, want); !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("got\n%s\nwant\n%s", g, compact(t, want))
	}
}

func compact(t *testing.T, s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

const secret = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"default",
	"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"password\":\"aHVudGVyMg==\"}}","team":"a"},
	"resourceVersion":"42"},"type":"Opaque","data":{"password":"aHVudGVyMg==","user":"YWRtaW4="},"stringData":{"token":"abc"}}`

const redactedSecret = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"default",
	"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"[redacted]","team":"a"},
	"resourceVersion":"42"},"type":"Opaque","data":{"password":"[redacted]","user":"[redacted]"},"stringData":{"token":"[redacted]"}}`

const configMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg",
	"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"a\":\"b\"}}"}},"data":{"a":"b","n":"1"}}`

func TestValueSecret(t *testing.T) {
	in := decode(t, secret)
	before, _ := json.Marshal(in)
	same(t, redact.Value(in), redactedSecret)
	if after, _ := json.Marshal(in); !bytes.Equal(before, after) {
		t.Error("Value modified its input")
	}
}

func TestValueSecretWithoutAPIVersion(t *testing.T) {
	same(t, redact.Value(decode(t, `{"kind":"Secret","data":{"k":"dg=="}}`)), `{"kind":"Secret","data":{"k":"[redacted]"}}`)
}

func TestValueLeavesOthers(t *testing.T) {
	for _, doc := range []string{
		configMap,
		// A kind named Secret in another group is not a Kubernetes Secret.
		`{"apiVersion":"acme.io/v1","kind":"Secret","data":{"k":"v"}}`,
		`{"data":{"password":"x"}}`,
		`[1, 2.50, 12345678901234567890, "s", true, null]`,
		`"Secret"`,
	} {
		same(t, redact.Value(decode(t, doc)), doc)
	}
}

func TestValueBindingContext(t *testing.T) {
	ctx := `[{"binding":"secrets","type":"Event","watchEvent":"Added","object":` + secret + `,"filterResult":{"pw":"aHVudGVyMg==","len":12}},
		{"binding":"all","type":"Synchronization","objects":[{"object":` + configMap + `,"filterResult":"keep"},{"object":` + secret + `}],
		 "snapshots":{"secrets":[{"object":` + secret + `,"filterResult":["x",1]}],"cms":[{"object":` + configMap + `,"filterResult":"keep"}]}}]`
	want := `[{"binding":"secrets","type":"Event","watchEvent":"Added","object":` + redactedSecret + `,"filterResult":{"pw":"[redacted]","len":12}},
		{"binding":"all","type":"Synchronization","objects":[{"object":` + configMap + `,"filterResult":"keep"},{"object":` + redactedSecret + `}],
		 "snapshots":{"secrets":[{"object":` + redactedSecret + `,"filterResult":["[redacted]",1]}],"cms":[{"object":` + configMap + `,"filterResult":"keep"}]}}]`
	same(t, redact.Value(decode(t, ctx)), want)
}

func TestValueLists(t *testing.T) {
	list := `{"apiVersion":"v1","kind":"List","items":[` + secret + `,` + configMap + `]}`
	same(t, redact.Value(decode(t, list)), `{"apiVersion":"v1","kind":"List","items":[`+redactedSecret+`,`+configMap+`]}`)

	// The API server's SecretList: its items carry no kind.
	secretList := `{"apiVersion":"v1","kind":"SecretList","metadata":{},"items":[{"metadata":{"name":"a"},"data":{"k":"dg=="}}]}`
	same(t, redact.Value(decode(t, secretList)), `{"apiVersion":"v1","kind":"SecretList","metadata":{},"items":[{"metadata":{"name":"a"},"data":{"k":"[redacted]"}}]}`)
}

func TestValueOperations(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"Create", `{"operation":"Create","object":` + secret + `}`, `{"operation":"Create","object":` + redactedSecret + `}`},
		{"Apply", `{"operation":"Apply","object":` + secret + `,"force":true}`, `{"operation":"Apply","object":` + redactedSecret + `,"force":true}`},
		{"ApplySet",
			`{"operation":"ApplySet","name":"s","parent":{"kind":"ConfigMap","name":"p"},"objects":[` + configMap + `,` + secret + `]}`,
			`{"operation":"ApplySet","name":"s","parent":{"kind":"ConfigMap","name":"p"},"objects":[` + configMap + `,` + redactedSecret + `]}`},
		{"object as a YAML string",
			`{"operation":"Create","object":"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: dg==}\n"}`,
			`{"operation":"Create","object":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"[redacted]"}}}`},
		{"ConfigMap object as a string stays",
			`{"operation":"Create","object":"{\"kind\":\"ConfigMap\",\"data\":{\"k\":\"v\"}}"}`,
			`{"operation":"Create","object":"{\"kind\":\"ConfigMap\",\"data\":{\"k\":\"v\"}}"}`},
		{"MergePatch of a Secret",
			`{"operation":"MergePatch","kind":"Secret","namespace":"d","name":"s","mergePatch":{"data":{"k":"dg=="},"metadata":{"labels":{"a":"b"}}}}`,
			`{"operation":"MergePatch","kind":"Secret","namespace":"d","name":"s","mergePatch":{"data":{"k":"[redacted]"},"metadata":{"labels":{"a":"b"}}}}`},
		{"MergePatch of a Secret as a string",
			`{"operation":"MergePatch","kind":"secrets","name":"s","mergePatch":"stringData:\n  k: v\n"}`,
			`{"operation":"MergePatch","kind":"secrets","name":"s","mergePatch":{"stringData":{"k":"[redacted]"}}}`},
		{"JSONPatch of a Secret",
			`{"operation":"JSONPatch","apiVersion":"v1","kind":"Secret","name":"s","jsonPatch":[{"op":"replace","path":"/data/k","value":"dg=="},{"op":"add","path":"/data","value":{"a":"b"}}]}`,
			`{"operation":"JSONPatch","apiVersion":"v1","kind":"Secret","name":"s","jsonPatch":[{"op":"replace","path":"/data/k","value":"[redacted]"},{"op":"add","path":"/data","value":{"a":"[redacted]"}}]}`},
		{"JQPatch of a Secret",
			`{"operation":"JQPatch","kind":"Secret","name":"s","jqFilter":".data.k = \"dg==\""}`,
			`{"operation":"JQPatch","kind":"Secret","name":"s","jqFilter":"[redacted]"}`},
		{"MergePatch of a ConfigMap stays",
			`{"operation":"MergePatch","kind":"ConfigMap","name":"c","mergePatch":{"data":{"k":"v"}}}`,
			`{"operation":"MergePatch","kind":"ConfigMap","name":"c","mergePatch":{"data":{"k":"v"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { same(t, redact.Value(decode(t, tt.in)), tt.want) })
	}
}
