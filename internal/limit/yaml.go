package limit

import (
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// Bounds of YAML alias expansion. A document may repeat a part through
// aliases (&name ... *name), but decoding writes every repeat out: 100 KiB
// of YAML with one anchor of 100 KiB referenced a thousand times decodes
// to 100 MiB, and the operator's memory went to 677 MB for it. The YAML
// library refuses only the exponential cases (an alias of aliases of
// aliases); these bounds cover the rest.
const (
	// MinExpansion is how far any document with aliases may expand.
	MinExpansion = 1 << 20
	// ExpansionFactor is how many times its own size a larger document
	// may expand to.
	ExpansionFactor = 10
	// MaxExpansion is how far a document may expand, unless it is larger
	// itself: as far as a hook may write by default (DefaultHookOutput).
	MaxExpansion = DefaultHookOutput
)

// nodeBytes is what a node costs beyond its text: the punctuation and
// space a value takes in JSON, which the operator converts YAML to.
const nodeBytes = 2

// ExpansionError says that a document's aliases expand it beyond its bound.
type ExpansionError struct {
	// Input is the size of the document as written.
	Input int64
	// Expanded is how far its aliases expand it.
	Expanded int64
	// Limit is the bound for a document of that size (MaxExpanded).
	Limit int64
}

func (e *ExpansionError) Error() string {
	return fmt.Sprintf("its aliases (*name) would expand its %s to %s, over the limit of %s "+
		"(%d times its size, at least %s, at most %s or its own size); write fewer references to the same anchor, or split the document",
		Size(e.Input), Size(e.Expanded), Size(e.Limit), ExpansionFactor, Size(MinExpansion), Size(MaxExpansion))
}

// MaxExpanded returns how far a document of input bytes may expand:
// ExpansionFactor times input, at least MinExpansion, at most MaxExpansion
// or input, whichever is larger.
func MaxExpanded(input int) int64 {
	return max(min(max(MinExpansion, ExpansionFactor*int64(input)), MaxExpansion), int64(input))
}

// CheckYAML returns an *ExpansionError when the aliases of the parsed
// document n, input bytes as written, expand it beyond MaxExpanded(input).
// A document without aliases passes, whatever its size: its size is
// bounded by the file's. The walk visits each node once, however often it
// is referenced, so it costs no more than the parse did.
func CheckYAML(n *yaml.Node, input int) error {
	limit := MaxExpanded(input)
	w := walk{sizes: map[*yaml.Node]int64{}}
	size := w.size(n)
	if !w.aliases || size <= limit {
		return nil
	}
	return &ExpansionError{Input: int64(input), Expanded: size, Limit: limit}
}

type walk struct {
	sizes   map[*yaml.Node]int64
	aliases bool
}

// saturated is where counting stops, so that sums cannot overflow.
const saturated = 1 << 60

// size returns the expanded size of n, at most saturated.
func (w *walk) size(n *yaml.Node) int64 {
	if n == nil {
		return 0
	}
	if s, ok := w.sizes[n]; ok {
		return s
	}
	w.sizes[n] = 0 // an alias cycle, which the parser refuses, counts nothing
	var s int64
	switch n.Kind {
	case yaml.AliasNode:
		w.aliases = true
		s = w.size(n.Alias)
	case yaml.ScalarNode:
		s = nodeBytes + int64(len(n.Value))
	default: // document, sequence, mapping
		s = nodeBytes
		for _, c := range n.Content {
			s += w.size(c)
			if s > saturated {
				s = saturated
				break
			}
		}
	}
	w.sizes[n] = s
	return s
}
