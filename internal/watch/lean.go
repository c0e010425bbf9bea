package watch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/watch"
)

// Decoding a watch stream. The API server writes one compact JSON event
// per line, which lets each line be parsed by the small parser below
// instead of encoding/json's validating scanner, the largest cost of
// decoding; a line it cannot parse is decoded by encoding/json, which says
// what is wrong with it.
//
// Objects are decoded whole, into the same values encoding/json makes with
// UseNumber (maps, slices, strings, json.Number, bools, nil), or lean: an
// informer whose bindings keep no full objects and whose jqFilters read
// only some top-level keys of an object (see jq.Filter.TopLevelKeys:
// .data, {name: .metadata.name, spec: .spec}, ...) decodes only those
// keys, apiVersion and kind, and the few metadata fields the runtime reads
// (name, namespace, uid, resourceVersion, deletionTimestamp, finalizers,
// annotations). Everything else (managed fields, status, the rest of the
// metadata) is skipped without being decoded.

// leanKeep is what a stream decodes of each object besides apiVersion,
// kind and the metadata fields above: the top-level keys the filters read.
// nil means the whole object.
type leanKeep map[string]bool

// leanReader reads the events of a watch stream line by line.
type leanReader struct {
	r    *bufio.Reader
	keep leanKeep
	line []byte
	keys keyTable
}

func newLeanReader(r io.Reader, keep leanKeep) *leanReader {
	return &leanReader{r: bufio.NewReaderSize(r, 64<<10), keep: keep}
}

// next returns the next event. Errors of the stream (io.EOF, a timeout)
// are returned as they are, as json.Decoder returns them.
func (l *leanReader) next() (event, error) {
	for {
		line, err := l.readLine()
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return event{}, err
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return event{}, err
		}
		return l.keys.decodeEvent(line, l.keep)
	}
}

// readLine returns the next line, without its newline; it is valid until
// the next call.
func (l *leanReader) readLine() ([]byte, error) {
	if cap(l.line) > 1<<20 {
		l.line = nil // a rare large object's buffer is not kept for the stream's life
	}
	l.line = l.line[:0]
	for {
		part, err := l.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			l.line = append(l.line, part...)
			continue
		}
		if len(l.line) > 0 {
			l.line = append(l.line, part...)
			part = l.line
		}
		return bytes.TrimSuffix(part, []byte("\n")), err
	}
}

// decodeEvent decodes one line: the event's type, and its object as keep
// says (an ERROR's Status whole). A line the lean parser cannot read is
// decoded by encoding/json, which says what is wrong with it.
func (keys *keyTable) decodeEvent(line []byte, keep leanKeep) (event, error) {
	var e event
	var raw []byte // an object found before its event's type, decoded after
	decoded := false
	p := leanParser{b: line, keys: keys}
	err := p.object(func(key []byte) error {
		switch string(key) {
		case "type":
			s, err := p.str()
			e.Type = watch.EventType(s)
			return err
		case "object":
			if e.Type != "" && e.Type != watch.Error {
				// The API server writes the type first: the object is
				// decoded where it is, not skipped and read again.
				obj, err := p.objectAt(keep)
				e.Object, raw, decoded = obj, nil, true
				return err
			}
			start := p.i
			err := p.skip()
			raw, decoded = p.b[start:p.i], false
			return err
		}
		if bytes.EqualFold(key, []byte("type")) || bytes.EqualFold(key, []byte("object")) {
			return errLean // encoding/json matches these in any case: let it read the line
		}
		return p.skip()
	})
	// An object decoded for a type that a later "type" made ERROR is read
	// again below, whole.
	if err == nil && p.end() && (raw != nil || decoded && e.Type != watch.Error) {
		switch {
		case raw == nil:
		case e.Type == watch.Error:
			err = decodeNumbers(raw, &e.Object) // a Status, whole
		default:
			e.Object, err = keys.decodeObject(raw, keep)
		}
		if err == nil {
			return e, nil
		}
	}
	e = event{}
	return e, decodeNumbers(line, &e)
}

// decodeNumbers decodes data into v with encoding/json, numbers kept
// exact as the full decoder keeps them.
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// decodeObject decodes what the runtime and the filters read of one
// object: all of it when keep is nil.
func (keys *keyTable) decodeObject(raw []byte, keep leanKeep) (map[string]any, error) {
	p := leanParser{b: raw, keys: keys}
	out, err := p.objectAt(keep)
	if err == nil && !p.end() {
		err = errLean
	}
	return out, err
}

// objectAt decodes, as keep says, the object at p.i.
func (p *leanParser) objectAt(keep leanKeep) (map[string]any, error) {
	if keep == nil {
		return p.objectValue()
	}
	out := map[string]any{}
	err := p.object(func(key []byte) error {
		k := p.keys.key(key)
		switch {
		case keep[k] || k == "apiVersion" || k == "kind":
			v, err := p.value()
			out[k] = v
			return err
		case k == "metadata":
			m, err := p.metadata()
			out[k] = m
			return err
		}
		return p.skip()
	})
	return out, err
}

var errLean = errors.New("not one compact JSON object")

// leanParser walks JSON that encoding/json wrote (the API server's): it
// finds where values end without checking them, and decodes the values
// asked for (strings with escapes, or bytes that are not UTF-8, with
// encoding/json). Malformed input gives an error, never a panic.
type leanParser struct {
	b []byte
	i int
	// depth is how deeply value is nested now; like encoding/json, it
	// gives up beyond maxDepth.
	depth int
	keys  *keyTable
}

// keyTable makes the keys of decoded objects share their strings: the
// objects of one watch repeat the same keys (metadata, name, namespace,
// managedFields, the keys of their data and labels), and a key decoded
// once is not allocated again, for each object, nor kept once per object
// in the watch's cache. Only short keys are shared, and at most
// maxSharedKeys of them per stream, so that keys that never repeat (each
// object's own data keys, say) cannot make the table grow without end.
type keyTable struct {
	shared map[string]string
}

const (
	maxSharedKeys   = 2048
	maxSharedKeyLen = 64
)

// key returns key as a string, shared when it was seen before.
func (t *keyTable) key(key []byte) string {
	if t == nil || len(key) > maxSharedKeyLen {
		return string(key)
	}
	if s, ok := t.shared[string(key)]; ok {
		return s
	}
	s := string(key)
	if len(t.shared) < maxSharedKeys {
		if t.shared == nil {
			t.shared = map[string]string{}
		}
		t.shared[s] = s
	}
	return s
}

// maxDepth is encoding/json's limit of nesting.
const maxDepth = 10000

func (p *leanParser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// end says whether only white space is left.
func (p *leanParser) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// object calls field for each key of the object at p.i, with p.i at the
// key's value, which field must consume.
func (p *leanParser) object(field func(key []byte) error) error {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return errLean
	}
	p.i++
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return nil
	}
	for {
		p.ws()
		start := p.i
		key, escaped, err := p.stringBytes()
		if err != nil {
			return err
		}
		if escaped {
			var k string
			if json.Unmarshal(p.b[start:p.i], &k) != nil {
				return errLean
			}
			key = []byte(k)
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return errLean
		}
		p.i++
		p.ws()
		if err := field(key); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) {
			return errLean
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		default:
			return errLean
		}
	}
}

// stringBytes returns the content of the string at p.i, between its
// quotes, and whether it must be decoded by encoding/json: it has escapes,
// or bytes that are not UTF-8 (which encoding/json replaces with U+FFFD).
func (p *leanParser) stringBytes() ([]byte, bool, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false, errLean
	}
	start := p.i + 1
	escaped, high := false, false
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '\\':
			escaped = true
			j++
		case c == '"':
			p.i = j + 1
			s := p.b[start:j]
			return s, escaped || high && !utf8.Valid(s), nil
		case c >= utf8.RuneSelf:
			high = true
		}
	}
	return nil, false, errLean
}

// str decodes the string at p.i.
func (p *leanParser) str() (string, error) {
	start := p.i
	s, escaped, err := p.stringBytes()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(s), nil
	}
	var out string
	err = json.Unmarshal(p.b[start:p.i], &out)
	return out, err
}

// skip moves past the value at p.i.
func (p *leanParser) skip() error {
	if p.i >= len(p.b) {
		return errLean
	}
	switch p.b[p.i] {
	case '"':
		_, _, err := p.stringBytes()
		return err
	case '{', '[':
		depth := 0
		for p.i < len(p.b) {
			switch p.b[p.i] {
			case '"':
				if _, _, err := p.stringBytes(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					p.i++
					return nil
				}
			}
			p.i++
		}
		return errLean
	}
	start := p.i // a number, true, false or null
	for p.i < len(p.b) {
		if c := p.b[p.i]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			break
		}
		p.i++
	}
	if p.i == start {
		return errLean
	}
	return nil
}

// value decodes the value at p.i into the generic values encoding/json
// makes with UseNumber (numbers as json.Number, kept exact).
func (p *leanParser) value() (any, error) {
	if p.i >= len(p.b) {
		return nil, errLean
	}
	switch p.b[p.i] {
	case '"':
		return p.str()
	case '{':
		return p.objectValue()
	case '[':
		if p.depth++; p.depth > maxDepth {
			return nil, errLean
		}
		defer func() { p.depth-- }()
		p.i++
		out := []any{}
		for {
			p.ws()
			if p.i < len(p.b) && p.b[p.i] == ']' && len(out) == 0 {
				p.i++
				return out, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			p.ws()
			if p.i >= len(p.b) {
				return nil, errLean
			}
			switch p.b[p.i] {
			case ',':
				p.i++
			case ']':
				p.i++
				return out, nil
			default:
				return nil, errLean
			}
		}
	}
	start := p.i
	if err := p.skip(); err != nil {
		return nil, err
	}
	switch lit := p.b[start:p.i]; {
	case string(lit) == "true":
		return true, nil
	case string(lit) == "false":
		return false, nil
	case string(lit) == "null":
		return nil, nil
	case isNumber(lit):
		return json.Number(lit), nil
	}
	return nil, errLean
}

// objectValue decodes the object at p.i whole.
func (p *leanParser) objectValue() (map[string]any, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, errLean
	}
	defer func() { p.depth-- }()
	m := map[string]any{}
	err := p.object(func(key []byte) error {
		v, err := p.value()
		m[p.keys.key(key)] = v
		return err
	})
	return m, err
}

// isNumber says whether b is a JSON number.
func isNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// metadata decodes the metadata fields the runtime reads: the cache's key
// and version, the shard key (uid), deletion and finalizers, and the
// annotations (the bookmark that ends a streamed list is one).
func (p *leanParser) metadata() (map[string]any, error) {
	m := map[string]any{}
	err := p.object(func(key []byte) error {
		switch k := p.keys.key(key); k {
		case "name", "namespace", "uid", "resourceVersion", "deletionTimestamp":
			if p.i < len(p.b) && p.b[p.i] == 'n' { // null
				return p.skip()
			}
			s, err := p.str()
			m[k] = s
			return err
		case "finalizers", "annotations":
			v, err := p.value()
			m[k] = v
			return err
		}
		return p.skip()
	})
	return m, err
}
