package memlimit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// errNoCgroup means no cgroup memory controller was found.
var errNoCgroup = errors.New("no cgroup memory limit file")

// containerLimit reads the memory limit of the cgroup under root: bytes,
// or 0 for none.
func containerLimit(root string) (int64, error) {
	for _, name := range []string{"memory.max", "memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return parseLimit(name, strings.TrimSpace(string(b)))
	}
	return 0, errNoCgroup
}
