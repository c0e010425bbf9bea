package redact_test

import (
	"reflect"
	"testing"

	"github.com/hook-operator/hook-operator/internal/redact"
)

func TestContext(t *testing.T) {
	// keepFullObjectsInMemory: false: the Secrets themselves are absent,
	// only their filter results are there.
	ctx := `[
	  {"binding":"secrets","type":"Event","watchEvent":"Modified","filterResult":{"password":"aHVudGVyMg==","n":3,"ok":true,"none":null}},
	  {"binding":"secrets","type":"Synchronization","objects":[{"filterResult":["a",{"k":"b"}]},{"filterResult":"c"}]},
	  {"binding":"configmaps","type":"Event","watchEvent":"Added","filterResult":{"name":"cfg"},
	   "snapshots":{"secrets":[{"filterResult":"d"}],"configmaps":[{"filterResult":"cfg"}]}},
	  {"binding":"every-minute","type":"Schedule","snapshots":{"secrets":[{"filterResult":{"k":"e"}}]}},
	  {"binding":"group","type":"Group","groupName":"g","snapshots":{"secrets":[{"object":` + secret + `,"filterResult":"f"}]}}
	]`
	want := `[
	  {"binding":"secrets","type":"Event","watchEvent":"Modified","filterResult":{"password":"[redacted]","n":3,"ok":true,"none":null}},
	  {"binding":"secrets","type":"Synchronization","objects":[{"filterResult":["[redacted]",{"k":"[redacted]"}]},{"filterResult":"[redacted]"}]},
	  {"binding":"configmaps","type":"Event","watchEvent":"Added","filterResult":{"name":"cfg"},
	   "snapshots":{"secrets":[{"filterResult":"[redacted]"}],"configmaps":[{"filterResult":"cfg"}]}},
	  {"binding":"every-minute","type":"Schedule","snapshots":{"secrets":[{"filterResult":{"k":"[redacted]"}}]}},
	  {"binding":"group","type":"Group","groupName":"g","snapshots":{"secrets":[{"object":` + redactedSecret + `,"filterResult":"[redacted]"}]}}
	]`
	in := decode(t, ctx)
	same(t, redact.Context(in, map[string]bool{"secrets": true}), want)
	// Without the binding names only Value's rules apply.
	if got, want := redact.Context(in, nil), redact.Value(in); !reflect.DeepEqual(got, want) {
		t.Errorf("Context(ctx, nil) differs from Value(ctx)")
	}
}

func TestContextSingle(t *testing.T) {
	ctx := `{"binding":"tokens","type":"Event","watchEvent":"Added","filterResult":"dG9rZW4="}`
	same(t, redact.Context(decode(t, ctx), map[string]bool{"tokens": true}),
		`{"binding":"tokens","type":"Event","watchEvent":"Added","filterResult":"[redacted]"}`)
	same(t, redact.Context(decode(t, ctx), map[string]bool{"other": true}), ctx)
}
