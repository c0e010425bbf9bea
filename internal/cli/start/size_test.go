package start

import (
	"io"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"16Mi": 16 << 20, "1Gi": 1 << 30, "20M": 20e6, "4096": 4096} {
		var b ByteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for in, want := range map[string]string{"lots": `"lots" is not a size: write bytes or a quantity such as 16Mi or 1Gi`, "100": `"100": use at least 1Ki`} {
		var b ByteSize
		if err := b.Set(in); err == nil || err.Error() != want {
			t.Errorf("Set(%q): %v, want %s", in, err, want)
		}
	}
}

func TestMaxHookOutputFlag(t *testing.T) {
	cmd := New(io.Discard, logrus.New())
	f := cmd.Flags().Lookup("max-hook-output")
	if f == nil || f.DefValue != "8Mi" || !strings.Contains(f.Usage, "HOOK_OPERATOR_MAX_HOOK_OUTPUT") {
		t.Fatalf("flag %+v", f)
	}
	if err := cmd.Flags().Set("max-hook-output", "1Mi"); err != nil || f.Value.String() != "1Mi" {
		t.Errorf("set: %v, %s", err, f.Value)
	}
}
