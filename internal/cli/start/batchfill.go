package start

import (
	"fmt"
	"strconv"

	"github.com/hook-operator/hook-operator/internal/queue"
)

// BatchFill is --batch-fill: auto (queue.DefaultBatchFill events for a
// one-shot hook, queue.DefaultResidentBatchFill for a resident one) or one
// number for every hook (0: the window alone decides).
type BatchFill struct {
	Auto  bool
	Fixed int
}

// Set parses auto or a count from 0.
func (b *BatchFill) Set(s string) error {
	if s == "auto" {
		*b = BatchFill{Auto: true}
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q: use auto (%d events for a one-shot hook, %d for a resident one), or a count from 0 (the window alone decides)",
			s, queue.DefaultBatchFill, queue.DefaultResidentBatchFill)
	}
	*b = BatchFill{Fixed: n}
	return nil
}

// String writes auto or the count.
func (b *BatchFill) String() string {
	if b.Auto {
		return "auto"
	}
	return strconv.Itoa(b.Fixed)
}

// Type names the flag's value in --help.
func (b *BatchFill) Type() string { return "auto|count" }

// fills returns queue.Options' BatchFill and ResidentBatchFill.
func (b BatchFill) fills() (oneShot, resident int) {
	if b.Auto {
		return queue.DefaultBatchFill, queue.DefaultResidentBatchFill
	}
	return b.Fixed, 0 // BatchFill for every hook
}
