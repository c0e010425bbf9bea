package start

import (
	"fmt"
	"time"
)

// BatchWindow is --batch-window: auto (each hook's window follows its own
// recent run time, at most MaxBatchWindow) or a fixed window for every
// queue (0: none).
type BatchWindow struct {
	Auto  bool
	Fixed time.Duration
}

// MaxBatchWindow is the default window, and the longest that auto gives
// a hook; the longest fixed one allowed is a minute.
const MaxBatchWindow = 40 * time.Millisecond

// Set parses auto or a duration from 0 to 1m.
func (b *BatchWindow) Set(s string) error {
	if s == "auto" {
		*b = BatchWindow{Auto: true}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > time.Minute {
		return fmt.Errorf("%q: use auto, or a duration from 0 (none) to 1m", s)
	}
	*b = BatchWindow{Fixed: d}
	return nil
}

// String writes auto or the duration.
func (b *BatchWindow) String() string {
	if b.Auto {
		return "auto"
	}
	return b.Fixed.String()
}

// Type names the flag's value in --help.
func (b *BatchWindow) Type() string { return "auto|duration" }

// window is the queue set's BatchWindow: the fixed window, or under auto
// the longest.
func (b BatchWindow) window() time.Duration {
	if b.Auto {
		return MaxBatchWindow
	}
	return b.Fixed
}
