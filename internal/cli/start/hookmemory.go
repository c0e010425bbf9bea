package start

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hook-operator/hook-operator/internal/memlimit"
)

// HookMemory is --webhook-hook-memory: auto (the container's memory limit
// less the Go runtime's share of it, memlimit.HooksShare; not bounded
// without a limit), 0 (not bounded), or the bytes the hooks of the
// admission and conversion reviews in flight may use together.
type HookMemory struct {
	Auto  bool
	Bytes int64
}

// Set parses auto, 0 or a size of at least 16Mi.
func (h *HookMemory) Set(s string) error {
	if s == "auto" {
		*h = HookMemory{Auto: true}
		return nil
	}
	q, err := resource.ParseQuantity(s)
	n, ok := q.AsInt64()
	if err != nil || !ok || n < 0 {
		return fmt.Errorf("%q: use auto, 0 (not bounded) or a size such as 128Mi", s)
	}
	if n > 0 && n < 16<<20 {
		return fmt.Errorf("%q: use at least 16Mi (one small review's hook counts 8Mi), or 0 (not bounded)", s)
	}
	*h = HookMemory{Bytes: n}
	return nil
}

// String writes auto or the size.
func (h *HookMemory) String() string {
	if h.Auto {
		return "auto"
	}
	return resource.NewQuantity(h.Bytes, resource.BinarySI).String()
}

// Type names the flag's value in --help.
func (h *HookMemory) Type() string { return "auto|size" }

// resolve returns the bytes to bound the hooks' memory at (0: not
// bounded), reading the container's memory limit under cgroupRoot for
// auto, and says why.
func (h HookMemory) resolve(cgroupRoot string) (int64, string) {
	if !h.Auto {
		if h.Bytes == 0 {
			return 0, "--webhook-hook-memory=0: not bounded"
		}
		return h.Bytes, "set by --webhook-hook-memory"
	}
	c := memlimit.Choose(cgroupRoot)
	if c.Container == 0 {
		return 0, "the container has no memory limit (or it could not be read): not bounded"
	}
	return memlimit.HooksShare(c.Container), fmt.Sprintf("%.0f%% of the container's memory limit, the share the Go runtime leaves for the hooks", (1-memlimit.Fraction)*100)
}
