package binding

import "sort"

// Shape turns what a binding observed (a Synchronization, an Event or a
// Schedule tick) into the context its hook receives. A binding in a group
// produces a Group context, which carries the snapshots of every binding
// of the group (groupMembers) and no objects. Snapshots named by
// includeSnapshotsFrom are added either way.
func Shape(c Context, group string, groupMembers, includeSnapshotsFrom []string) Context {
	var from []string
	if group != "" {
		c = Context{Binding: c.Binding, Type: TypeGroup, GroupName: group}
		from = append(from, groupMembers...)
	}
	from = append(from, includeSnapshotsFrom...)
	if len(from) > 0 {
		sort.Strings(from)
		c.SnapshotsFrom = compact(from)
	}
	return c
}

func compact(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// FillSnapshots sets Snapshots on every context that names bindings in
// SnapshotsFrom, reading each binding's snapshot once through snapshot.
// A binding with no snapshot yields an empty list.
func FillSnapshots(contexts []Context, snapshot func(binding string) []Object) {
	cache := map[string][]Object{}
	for i := range contexts {
		c := &contexts[i]
		if len(c.SnapshotsFrom) == 0 {
			continue
		}
		c.Snapshots = make(map[string][]Object, len(c.SnapshotsFrom))
		for _, name := range c.SnapshotsFrom {
			objs, ok := cache[name]
			if !ok {
				objs = snapshot(name)
				if objs == nil {
					objs = []Object{}
				}
				cache[name] = objs
			}
			c.Snapshots[name] = objs
		}
	}
}
