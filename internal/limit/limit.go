// Package limit holds the bounds on what hooks hand to the operator, so that
// a hook's mistake costs it an error instead of costing the operator its
// memory: how a size is written in those errors (Size), how far a YAML
// document's aliases may expand it (CheckYAML), how long an error text
// listing many problems may grow (Join, Quote), and which of a hook's
// characters are shown escaped (Printable).
package limit

import "fmt"

// DefaultHookOutput is the most the operator reads, by default, from one
// file a hook writes and from its --config output (docs/operating.md says
// why 8 MiB).
const DefaultHookOutput = 8 << 20

// Size writes n bytes for people: "512 B", "1.5 KiB", "16 MiB", "64 GiB".
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	s := fmt.Sprintf("%.1f", v)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + " " + []string{"KiB", "MiB", "GiB", "TiB", "PiB"}[i]
}
