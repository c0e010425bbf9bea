package run

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRunRefusesASparse64GiBOutputWithoutReadingIt(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, `truncate -s 64G "$KUBERNETES_PATCH_PATH"`)
	_, err := r.Run(context.Background(), Request{Hook: h})
	var tooLarge *OutputTooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("got %v, want an *OutputTooLargeError", err)
	}
	want := "hook test/hook.sh: the file $KUBERNETES_PATCH_PATH (the operations) is 64 GiB, over the limit of 8 MiB " +
		"on what the operator reads from a hook's file; write less to it (split the work over several runs), " +
		"or raise the limit with start's --max-hook-output"
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant\n%s", err, want)
	}
	assertEmptyDir(t, r.TmpDir)
}

func TestRunRefusesEachOutputFileOverTheLimit(t *testing.T) {
	for _, env := range []string{"KUBERNETES_PATCH_PATH", "METRICS_PATH", "ADMISSION_RESPONSE_PATH", "VALIDATING_RESPONSE_PATH", "CONVERSION_RESPONSE_PATH"} {
		t.Run(env, func(t *testing.T) {
			r, _ := testRunner(t)
			r.MaxOutputBytes = 1000
			h := bashHook(t, `head -c 1001 /dev/zero > "$`+env+`"`)
			_, err := r.Run(context.Background(), Request{Hook: h})
			want := "VALIDATING_RESPONSE_PATH" // the admission file's other name
			if env != "ADMISSION_RESPONSE_PATH" {
				want = env
			}
			if err == nil || !strings.Contains(err.Error(), "$"+want+" (") || !strings.Contains(err.Error(), "is 1001 B, over the limit of 1000 B") {
				t.Errorf("got %v", err)
			}
		})
	}
}

func TestRunReadsAnOutputFileAtTheLimit(t *testing.T) {
	r, _ := testRunner(t)
	r.MaxOutputBytes = 1000
	h := bashHook(t, `head -c 1000 /dev/zero > "$KUBERNETES_PATCH_PATH"`)
	res, err := r.Run(context.Background(), Request{Hook: h})
	if err != nil || len(res.Operations) != 1000 {
		t.Fatalf("got %d bytes, %v", len(res.Operations), err)
	}
}

// A file that grows after its size was checked (a process the hook left
// running still writes) is cut off at the limit while it is read.
func TestReadAtMostStopsAfterTheLimit(t *testing.T) {
	r := &countingReader{left: 1 << 30}
	b, err := readAtMost(r, 10, 1000)
	if !errors.Is(err, errOverLimit) {
		t.Fatalf("got %d bytes and %v, want errOverLimit", len(b), err)
	}
	if r.read > 1000+bytes.MinRead {
		t.Errorf("read %d bytes of the reader, want about the limit", r.read)
	}
	b, err = readAtMost(strings.NewReader(strings.Repeat("x", 1000)), 10, 1000)
	if err != nil || len(b) != 1000 {
		t.Errorf("at the limit: got %d bytes, %v", len(b), err)
	}
	msg := (&OutputTooLargeError{Env: envMetrics, Size: 1001, Limit: 1000, Growing: true}).Error()
	if !strings.Contains(msg, "$METRICS_PATH (the metrics) grew past 1000 B while it was read") {
		t.Errorf("message: %s", msg)
	}
}

// countingReader returns zeros until left is used up.
type countingReader struct{ left, read int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > c.left {
		n = c.left
	}
	c.read += n
	c.left -= n
	clear(p[:n])
	return int(n), nil
}
