package webhook

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

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
