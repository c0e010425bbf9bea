// Package binding holds binding contexts: what a hook is told about why it
// runs, written as a JSON array to the file at $BINDING_CONTEXT_PATH. The
// live runtime, dry-run and replay build them with this package alone, so
// the shape below is the contract (docs/binding-contexts.md).
package binding

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// Context types.
const (
	TypeSchedule        = "Schedule"
	TypeSynchronization = "Synchronization"
	TypeEvent           = "Event"
	TypeGroup           = "Group"
	// TypeValidating and TypeMutating carry an admission request (review).
	TypeValidating = "Validating"
	TypeMutating   = "Mutating"
	// TypeConversion carries a ConversionReview and the step of the
	// conversion chain the hook is asked for (fromVersion, toVersion).
	TypeConversion = "Conversion"
)

// OnStartup is the binding name of start-up runs.
const OnStartup = "onStartup"

// Object is one watched object as a binding presents it: the object itself
// (unless the binding drops full objects) and its jqFilter result (when the
// binding has a filter).
type Object struct {
	// Namespace and Name identify the object; they order snapshots.
	Namespace, Name string
	// Raw is the JSON of the whole object (object keys sorted), or nil when
	// keepFullObjectsInMemory is false. It is shared with the watch cache
	// and must not be modified.
	Raw json.RawMessage
	// FilterResult is the JSON of the jqFilter's result, or nil when the
	// binding has no jqFilter.
	FilterResult json.RawMessage
}

// MarshalJSON writes {"object":...,"filterResult":...}, each key present only
// when it applies.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	o.writeFields(&b, false)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeFields writes the object's keys; comma says whether one must precede.
func (o Object) writeFields(b jsonWriter, comma bool) {
	if o.Raw != nil {
		if comma {
			b.WriteByte(',')
		}
		b.WriteString(`"object":`)
		b.Write(o.Raw)
		comma = true
	}
	if o.FilterResult != nil {
		if comma {
			b.WriteByte(',')
		}
		b.WriteString(`"filterResult":`)
		b.Write(o.FilterResult)
	}
}

// Context is one binding context.
type Context struct {
	// Binding is the name of the binding that fired ("onStartup" for start-up).
	Binding string
	// Type is empty for onStartup, else one of the Type constants.
	Type string
	// WatchEvent is Added, Modified or Deleted for Event contexts.
	WatchEvent string
	// Objects lists every matching object of a Synchronization context.
	Objects []Object
	// Object is the object of an Event context.
	Object *Object
	// GroupName is set for Group contexts.
	GroupName string
	// Snapshots maps binding names to their current objects; nil means the
	// context carries no snapshots.
	Snapshots map[string][]Object
	// Review is the AdmissionReview of a Validating or Mutating context, as
	// the API server sent it, or the ConversionReview of a Conversion one.
	Review json.RawMessage
	// FromVersion and ToVersion are the conversion rule of a Conversion
	// context, as its binding declares it.
	FromVersion, ToVersion string
	// SnapshotsFrom names the bindings whose snapshots this context carries
	// (from group and includeSnapshotsFrom); the runtime fills Snapshots
	// from them just before the hook starts.
	SnapshotsFrom []string `json:"-"`
}

// MarshalJSON writes the context in the contract's shape and key order.
func (c Context) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := c.write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// write appends the context's JSON to b.
func (c Context) write(b jsonWriter) error {
	b.WriteString(`{"binding":`)
	writeString(b, c.Binding)
	if c.Type != "" {
		b.WriteString(`,"type":`)
		writeString(b, c.Type)
	}
	if c.GroupName != "" {
		b.WriteString(`,"groupName":`)
		writeString(b, c.GroupName)
	}
	switch c.Type {
	case TypeSynchronization:
		b.WriteString(`,"objects":`)
		writeObjects(b, c.Objects)
	case TypeEvent:
		b.WriteString(`,"watchEvent":`)
		writeString(b, c.WatchEvent)
		if c.Object != nil {
			c.Object.writeFields(b, true)
		}
	case TypeValidating, TypeMutating, TypeConversion:
		if c.Type == TypeConversion {
			b.WriteString(`,"fromVersion":`)
			writeString(b, c.FromVersion)
			b.WriteString(`,"toVersion":`)
			writeString(b, c.ToVersion)
		}
		b.WriteString(`,"review":`)
		if len(c.Review) == 0 {
			b.WriteString("null")
		} else {
			var review bytes.Buffer
			if err := json.Compact(&review, c.Review); err != nil {
				return fmt.Errorf("binding %s: the review is not JSON: %w", c.Binding, err)
			}
			b.Write(review.Bytes())
		}
	}
	if c.Snapshots != nil {
		b.WriteString(`,"snapshots":{`)
		names := make([]string, 0, len(c.Snapshots))
		for n := range c.Snapshots {
			names = append(names, n)
		}
		sort.Strings(names)
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, n)
			b.WriteByte(':')
			writeObjects(b, c.Snapshots[n])
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return nil
}

// writeObjects writes objs as a JSON array ([] when empty).
func writeObjects(b jsonWriter, objs []Object) {
	b.WriteByte('[')
	for i, o := range objs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		o.writeFields(b, false)
		b.WriteByte('}')
	}
	b.WriteByte(']')
}

func writeString(b jsonWriter, s string) {
	data, _ := json.Marshal(s) // a string always encodes
	b.Write(data)
}

// SortObjects orders objects by namespace, then name, as snapshots and
// Synchronization contexts list them.
func SortObjects(objs []Object) {
	sort.Slice(objs, func(i, j int) bool {
		if objs[i].Namespace != objs[j].Namespace {
			return objs[i].Namespace < objs[j].Namespace
		}
		return objs[i].Name < objs[j].Name
	})
}

// Encode writes contexts as the JSON array a hook reads. It writes the
// array itself rather than through json.Marshal, which would scan every
// context's output again to check and compact it: the objects in it are
// JSON the runtime wrote (watch entries, jq results; a review is compacted
// as it is written), and scanning them again was the largest part of
// preparing a run (FuzzEncodeRoundTrip checks the result is valid JSON).
//
// The buffer is sized once, from sizeHint, before anything is written: a
// buffer left to grow by doubling allocated about three times what it
// finally held, and held the old and the new copy at once. Where the bytes
// are not needed afterwards, Write does without the buffer.
func Encode(contexts []Context) ([]byte, error) {
	// The slice is made here rather than by b.Grow, which allocates it
	// twice over in a -race build (make, then append's copy of it).
	b := bytes.NewBuffer(make([]byte, 0, sizeHint(contexts)))
	if err := encode(b, contexts); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Write writes what Encode returns to w, through a small buffer of its
// own: a Synchronization of 100,000 full objects is about 45 MB of JSON,
// and held whole, it was the largest part of the start-up memory peak
// (docs/design/process.md, "The start-up memory peak").
func Write(w io.Writer, contexts []Context) error {
	b := bufio.NewWriterSize(w, 64<<10)
	if err := encode(b, contexts); err != nil {
		return err
	}
	return b.Flush()
}

// jsonWriter is what the encoding writes to: a bytes.Buffer (Encode) or a
// bufio.Writer (Write). Their writes fail only when the bufio.Writer's
// does, and then it remembers the error and Flush returns it.
type jsonWriter interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
}

func encode(b jsonWriter, contexts []Context) error {
	b.WriteByte('[')
	for i, c := range contexts {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := c.write(b); err != nil {
			return err
		}
	}
	// A final newline, as shell-operator v1.20 writes (#871): a hook
	// that reads the file with `read -r ctx <file` under set -e fails on
	// a file without one (read returns 1 at end of file).
	b.WriteString("]\n")
	return nil
}

// Upper bounds of what Encode writes around the JSON it copies: per object
// ({"object":,"filterResult":} and a comma) and per context (its keys,
// binding, type and group names, and a conversion's versions, which are
// short names; a longer one only makes the buffer grow once).
const (
	objectOverhead  = 32
	contextOverhead = 512
)

// sizeHint returns about how many bytes Encode writes for contexts, at
// least that many unless a context's names are unusually long.
func sizeHint(contexts []Context) int {
	n := 3
	object := func(o *Object) { n += len(o.Raw) + len(o.FilterResult) + objectOverhead }
	for _, c := range contexts {
		n += contextOverhead + len(c.Review)
		for i := range c.Objects {
			object(&c.Objects[i])
		}
		if c.Object != nil {
			object(c.Object)
		}
		for name, snap := range c.Snapshots {
			n += len(name) + 8
			for i := range snap {
				object(&snap[i])
			}
		}
	}
	return n
}
