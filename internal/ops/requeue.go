package ops

import (
	"encoding/json"
	"time"
)

// maxRequeueAfter bounds Requeue's "after": a hook that wants to run less
// often than daily wants a schedule binding.
const maxRequeueAfter = 24 * time.Hour

func (p *parser) parseAfter(raw json.RawMessage) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.fail("after", `must be a string holding a duration such as "30s", "5m" or "1h30m", got %s`, describeJSON(raw))
		return
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.fail("after", "%q is not a duration: write it like 30s, 5m or 1h30m", s)
		return
	}
	if d <= 0 || d > maxRequeueAfter {
		p.fail("after", "%s is out of range: it must be more than 0 and at most 24h", s)
		return
	}
	p.op.After = d
}
