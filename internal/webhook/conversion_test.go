package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestVersionsMatch(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"stable.example.com/v1", "stable.example.com/v1", true},
		{"v1", "stable.example.com/v1", true},
		{"stable.example.com/v1", "v1", true},
		{"v1", "v1", true},
		{"stable.example.com/v1", "unstable.example.com/v1", false},
		{"v1", "stable.example.com/v1beta1", false},
		{"v1", "v2", false},
	} {
		if got := VersionsMatch(c.a, c.b); got != c.want {
			t.Errorf("VersionsMatch(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestFindChain(t *testing.T) {
	// shell-operator's documented example: three rules, from another group
	// and with a version without its group.
	rules := []ConversionRule{
		{"unstable.crontab.io/v1beta1", "stable.example.com/v1beta1"},
		{"stable.example.com/v1beta1", "stable.example.com/v1beta2"},
		{"v1beta2", "v1"},
		{"stable.example.com/v1", "stable.example.com/v1beta1"},
	}
	for _, c := range []struct {
		from, to string
		want     []ConversionRule
	}{
		{"stable.example.com/v1beta1", "stable.example.com/v1beta2", rules[1:2]},
		{"unstable.crontab.io/v1beta1", "stable.example.com/v1", rules[0:3]},
		{"stable.example.com/v1beta2", "stable.example.com/v1", rules[2:3]},
		// The shortest of two ways.
		{"stable.example.com/v1", "stable.example.com/v1beta2", []ConversionRule{rules[3], rules[1]}},
		{"stable.example.com/v1", "unstable.crontab.io/v1beta1", nil},
		{"other.example.com/v1beta1", "stable.example.com/v1", nil},
	} {
		if got := FindChain(rules, c.from, c.to); !reflect.DeepEqual(got, c.want) {
			t.Errorf("FindChain(%s -> %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	// A cycle does not loop.
	cycle := []ConversionRule{{"g/v1", "g/v2"}, {"g/v2", "g/v1"}}
	if got := FindChain(cycle, "g/v1", "g/v3"); got != nil {
		t.Errorf("FindChain in a cycle = %v, want nil", got)
	}
}

// bump is a conversion step that sets the apiVersion of the objects of the
// rule's from-version to its to-version and counts its calls.
func bump(calls *[]string) ConversionStep {
	return func(_ context.Context, _ string, rule ConversionRule, req ConversionRequest) ([]json.RawMessage, error) {
		*calls = append(*calls, rule.String())
		out := make([]json.RawMessage, len(req.Objects))
		for i, o := range req.Objects {
			var m map[string]any
			if err := json.Unmarshal(o, &m); err != nil {
				return nil, err
			}
			if VersionsMatch(m["apiVersion"].(string), rule.From) {
				m["apiVersion"] = "g/" + strings.TrimPrefix(rule.To, "g/")
			}
			out[i], _ = json.Marshal(m)
		}
		return out, nil
	}
}

func objects(versions ...string) []json.RawMessage {
	var out []json.RawMessage
	for i, v := range versions {
		out = append(out, json.RawMessage(fmt.Sprintf(`{"apiVersion":%q,"kind":"K","metadata":{"name":"o%d"}}`, v, i)))
	}
	return out
}

func versions(t *testing.T, objs []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		v, err := apiVersionOf(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestConvertRunsChainsUntilEveryObjectIsThere(t *testing.T) {
	rules := []ConversionRule{{"g/v1alpha1", "g/v1alpha2"}, {"v1alpha2", "v1"}, {"g/v1beta1", "g/v1"}}
	var calls []string
	got, err := Convert(context.Background(), "ks.g", rules, ConversionRequest{UID: "u", DesiredAPIVersion: "g/v1",
		Objects: objects("g/v1alpha1", "g/v1beta1", "g/v1", "g/v1alpha1")}, bump(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if v := versions(t, got); !reflect.DeepEqual(v, []string{"g/v1", "g/v1", "g/v1", "g/v1"}) {
		t.Errorf("versions after conversion = %v", v)
	}
	// The first pending version's chain (two steps), then the next one's.
	want := []string{"g/v1alpha1 -> g/v1alpha2", "v1alpha2 -> v1", "g/v1beta1 -> g/v1"}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("steps = %v, want %v", calls, want)
	}
	// Nothing to do: no step runs.
	calls = nil
	if _, err := Convert(context.Background(), "ks.g", rules, ConversionRequest{DesiredAPIVersion: "g/v1", Objects: objects("g/v1")}, bump(&calls)); err != nil || calls != nil {
		t.Errorf("objects already there: %v, steps %v", err, calls)
	}
}

func TestConvertFailsWhole(t *testing.T) {
	rules := []ConversionRule{{"g/v1alpha1", "g/v1"}}
	var calls []string
	_, err := Convert(context.Background(), "ks.g", rules, ConversionRequest{DesiredAPIVersion: "g/v1", Objects: objects("g/v1alpha1", "g/v2")}, bump(&calls))
	var f *ConversionFailure
	if !errors.As(err, &f) || !strings.Contains(err.Error(), "no hook converts ks.g from g/v2 to g/v1") {
		t.Errorf("an object no chain leads from: %v", err)
	}
	// A hook that returns objects as they were.
	lazy := func(_ context.Context, _ string, _ ConversionRule, req ConversionRequest) ([]json.RawMessage, error) {
		return req.Objects, nil
	}
	if _, err := Convert(context.Background(), "ks.g", rules, ConversionRequest{DesiredAPIVersion: "g/v1", Objects: objects("g/v1alpha1")}, lazy); err == nil || !strings.Contains(err.Error(), "left objects at g/v1alpha1") {
		t.Errorf("a chain that converts nothing: %v", err)
	}
	short := func(_ context.Context, _ string, _ ConversionRule, req ConversionRequest) ([]json.RawMessage, error) {
		return objects("g/v1"), nil
	}
	if _, err := Convert(context.Background(), "ks.g", rules, ConversionRequest{DesiredAPIVersion: "g/v1", Objects: objects("g/v1alpha1", "g/v1alpha1")}, short); err == nil || !strings.Contains(err.Error(), "returned 1 objects for 2") {
		t.Errorf("a step that loses an object: %v", err)
	}
	stepErr := errors.New("hook failed")
	failing := func(context.Context, string, ConversionRule, ConversionRequest) ([]json.RawMessage, error) {
		return nil, stepErr
	}
	if _, err := Convert(context.Background(), "ks.g", rules, ConversionRequest{DesiredAPIVersion: "g/v1", Objects: objects("g/v1alpha1")}, failing); !errors.Is(err, stepErr) {
		t.Errorf("a failing step: %v", err)
	}
}

func TestParseConversionResponse(t *testing.T) {
	ok := `{"convertedObjects": [{"apiVersion": "g/v1", "kind": "K"}]}`
	r, err := ParseConversionResponse([]byte(ok), 1)
	if err != nil || len(r.ConvertedObjects) != 1 {
		t.Fatalf("a good response: %v %v", r, err)
	}
	if r, err := ParseConversionResponse([]byte(`{"failedMessage": "no"}`), 3); err != nil || r.FailedMessage != "no" {
		t.Errorf("a failedMessage: %v %v", r, err)
	}
	for data, want := range map[string]string{
		"":                                 "wrote no response",
		`{"convertedObjects": []}`:         "holds 0 objects for the 1",
		`{"convertedObjects": [{"a": 1}]}`: "convertedObjects[0] is not an object with an apiVersion",
		`{"convertedObjects": [1]}`:        "convertedObjects[0] is not an object",
		`{"converted": []}`:                `unknown field "converted" (the keys are convertedObjects and failedMessage)`,
		ok + ok:                            "more than one JSON value",
		`{"failedMessage": "x", "convertedObjects": [{"apiVersion": "g/v1"}]}`: "both failedMessage and convertedObjects",
	} {
		if _, err := ParseConversionResponse([]byte(data), 1); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConversionResponse(%q) = %v, want an error with %q", data, err, want)
		}
	}
}

func TestServeConversion(t *testing.T) {
	var gotCRD string
	convert := func(_ context.Context, crd string, req ConversionRequest) ([]json.RawMessage, error) {
		gotCRD = crd
		if req.DesiredAPIVersion == "g/v9" {
			return nil, &ConversionFailure{Msg: "no way to v9"}
		}
		return objects(req.DesiredAPIVersion), nil
	}
	var logged error
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ServeConversion(w, r, convert, func(err error, _ string) { logged = err })
	}))
	defer srv.Close()
	post := func(body string) (int, map[string]any) {
		resp, err := http.Post(srv.URL+"/ks.g", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, out := post(`{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"uid": "u1", "desiredAPIVersion": "g/v1", "objects": [{"apiVersion": "g/v0"}]}}`)
	resp, _ := out["response"].(map[string]any)
	if code != 200 || gotCRD != "ks.g" || resp["uid"] != "u1" || fmt.Sprint(resp["result"]) != "map[status:Success]" || len(resp["convertedObjects"].([]any)) != 1 || out["request"] != nil {
		t.Errorf("a conversion: %d %v (crd %q)", code, out, gotCRD)
	}
	_, out = post(`{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"uid": "u2", "desiredAPIVersion": "g/v9", "objects": [{"apiVersion": "g/v0"}]}}`)
	resp, _ = out["response"].(map[string]any)
	if fmt.Sprint(resp["result"]) != "map[message:no way to v9 status:Failure]" || logged == nil {
		t.Errorf("a failed conversion: %v (logged %v)", out, logged)
	}
	for body, want := range map[string]int{
		`{"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview", "request": {"uid": "u", "desiredAPIVersion": "g/v1"}}`: 400,
		`{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}`:                                                            400,
		`not json`: 400,
	} {
		if code, _ := post(body); code != want {
			t.Errorf("POST %s: %d, want %d", body, code, want)
		}
	}
}

// setAPIVersion changes the top-level apiVersion of each object and
// nothing else: not a nested apiVersion, not the spacing, not the order
// of keys; it adds one where there is none, and refuses what is not an
// object.
func TestSetAPIVersionRewritesEachObjectInPlace(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"apiVersion":"example.com/v1","kind":"K"}`, `{"apiVersion":"example.com/v2","kind":"K"}`},
		{`{ "kind" : "K", "apiVersion" :  "v1" , "spec":{"apiVersion":"x/v1","n":[1,2]}}`, `{ "kind" : "K", "apiVersion" :  "example.com/v2" , "spec":{"apiVersion":"x/v1","n":[1,2]}}`},
		{`{"apiVersion":null,"apiVersion":7}`, `{"apiVersion":"example.com/v2","apiVersion":"example.com/v2"}`},
		{`{"kind":"K"}`, `{"apiVersion":"example.com/v2","kind":"K"}`},
		{`{}`, `{"apiVersion":"example.com/v2"}`},
		{"\t{ }", "\t{\"apiVersion\":\"example.com/v2\" }"},
		{`{"a\"piVersion":"v1","data":"\"apiVersion\":\"v1\""}`, `{"apiVersion":"example.com/v2","a\"piVersion":"v1","data":"\"apiVersion\":\"v1\""}`},
	} {
		out, err := setAPIVersion(ConversionRequest{DesiredAPIVersion: "example.com/v2", Objects: []json.RawMessage{json.RawMessage(c.in)}})
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := string(out[0]); got != c.want || !json.Valid(out[0]) {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{`[1]`, `"s"`, `3`} {
		_, err := setAPIVersion(ConversionRequest{DesiredAPIVersion: "v2", Objects: []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(bad)}})
		if err == nil || !strings.HasPrefix(err.Error(), "object 1 is not a JSON object") {
			t.Errorf("%s: %v, want object 1 refused", bad, err)
		}
	}
}

// A review of 8 MiB of small objects is rewritten with allocations of a
// few times its size; parsing each object into a map took about 20 times
// (and so 16 at once, 128 to 740 MB).
func TestSetAPIVersionAllocatesAboutTheReviewsSize(t *testing.T) {
	var objects []json.RawMessage
	size := 0
	for i := 0; size < 8<<20; i++ {
		var fields []string
		for j := range 40 {
			fields = append(fields, fmt.Sprintf(`"k%d":"v%d"`, j, j))
		}
		o := json.RawMessage(fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"K","metadata":{"name":"o%d"},"spec":{%s}}`, i, strings.Join(fields, ",")))
		objects = append(objects, o)
		size += len(o)
	}
	req := ConversionRequest{DesiredAPIVersion: "example.com/v2", Objects: objects}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := setAPIVersion(req)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(objects) || !strings.HasPrefix(string(out[len(out)-1]), `{"apiVersion":"example.com/v2","kind":"K"`) {
		t.Fatalf("not converted: %d objects, the last %.80s", len(out), out[len(out)-1])
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d objects, %d MiB: %d MiB allocated", len(objects), size>>20, allocated>>20)
	if allocated > 4*uint64(size) {
		t.Errorf("rewriting %d MiB of objects allocated %d MiB; want 4 times the size at most", size>>20, allocated>>20)
	}
}
