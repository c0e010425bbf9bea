package metrics

import (
	"strings"
	"testing"
)

func TestParseHookOpsErrorOfManyLinesIsBounded(t *testing.T) {
	data := strings.Repeat(`{"name": "m", "action": "explode", "value": 1}`+"\n", 50_000)
	_, err := ParseHookOps([]byte(data))
	if err == nil {
		t.Fatal("no error")
	}
	if j, ok := err.(interface{ Unwrap() []error }); !ok || len(j.Unwrap()) != 50_000 {
		t.Errorf("the error does not hold every line's problem")
	}
	msg := err.Error()
	if len(msg) > 12<<10 || !strings.HasPrefix(msg, "line 1: ") ||
		!strings.HasSuffix(msg, "... and 49990 more (50000 problems in all; fix these and run again to see the rest)") {
		t.Errorf("message of %d bytes:\n%.500s", len(msg), msg)
	}
}
