package binding

// Combine merges the pending contexts of one hook, oldest first, into what
// one run receives: consecutive Group contexts of the same group collapse
// into the last of them (its snapshots describe the state for all of them),
// everything else is kept in order.
func Combine(contexts []Context) []Context {
	out := make([]Context, 0, len(contexts))
	for _, c := range contexts {
		if n := len(out); n > 0 && c.Type == TypeGroup && out[n-1].Type == TypeGroup && out[n-1].GroupName == c.GroupName {
			out[n-1] = c
			continue
		}
		out = append(out, c)
	}
	return out
}
