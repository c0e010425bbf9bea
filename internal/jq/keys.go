package jq

import (
	"slices"
	"strings"

	"github.com/itchyny/gojq"
)

// TopLevelKeys returns the top-level keys of its input that the program
// reads, when the program provably reads nothing else of the input: for
// every object o, its results on o and on o with only those keys are the
// same. ok is false when that cannot be shown (the program passes the
// whole input on, iterates it, lists its keys, defines functions, ...);
// the caller then gives it the whole input.
//
// The analysis follows where the input itself (not a value derived from
// it) can flow: through pipes whose left side may output it, into the
// operands of operators, object and array constructors, conditions,
// variable bindings' bodies and the arguments of select. There, the only
// use allowed is an index by a constant name (.metadata, ."x", .["x"]),
// which names a key; anything else that would see the input whole fails
// the analysis.
func (f *Filter) TopLevelKeys() (keys []string, ok bool) {
	q, err := gojq.Parse(f.src)
	if err != nil {
		return nil, false
	}
	a := keyAnalysis{keys: map[string]bool{}}
	outputsInput := a.query(q, true)
	if !a.ok() || outputsInput {
		return nil, false
	}
	for k := range a.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, true
}

type keyAnalysis struct {
	keys   map[string]bool
	failed bool
}

func (a *keyAnalysis) ok() bool { return !a.failed }

func (a *keyAnalysis) fail() bool { a.failed = true; return false }

// query analyses q, whose input is the program's input when in is true,
// and says whether q may output that input itself.
func (a *keyAnalysis) query(q *gojq.Query, in bool) bool {
	if q == nil || !in || a.failed {
		return false // a derived value: nothing of the input is reachable
	}
	if q.Meta != nil || len(q.Imports) > 0 || len(q.FuncDefs) > 0 {
		return a.fail()
	}
	if len(q.Patterns) > 0 { // left as $x | right: right gets the same input
		if a.query(q.Left, in) || (q.Term != nil && a.term(q.Term, in)) || !a.patterns(q.Patterns) {
			return a.fail() // the input itself bound to a variable
		}
		return a.query(q.Right, in)
	}
	if q.Term != nil {
		return a.term(q.Term, in)
	}
	switch q.Op {
	case gojq.OpPipe:
		return a.query(q.Right, a.query(q.Left, in))
	case gojq.OpComma, gojq.OpAlt:
		l := a.query(q.Left, in)
		r := a.query(q.Right, in)
		return l || r
	case gojq.OpAdd, gojq.OpSub, gojq.OpMul, gojq.OpDiv, gojq.OpMod,
		gojq.OpEq, gojq.OpNe, gojq.OpGt, gojq.OpLt, gojq.OpGe, gojq.OpLe, gojq.OpAnd, gojq.OpOr:
		if a.query(q.Left, in) || a.query(q.Right, in) {
			return a.fail() // the input itself as an operand
		}
		return false
	}
	return a.fail() // assignments and updates change the input itself
}

// patterns checks destructuring patterns: keys computed by a query would
// see the input.
func (a *keyAnalysis) patterns(ps []*gojq.Pattern) bool {
	for _, p := range ps {
		if !a.patterns(p.Array) {
			return false
		}
		for _, o := range p.Object {
			if o.KeyQuery != nil || (o.KeyString != nil && len(o.KeyString.Queries) > 0) {
				return false
			}
			if o.Val != nil && !a.patterns([]*gojq.Pattern{o.Val}) {
				return false
			}
		}
	}
	return true
}

// term analyses t with the input (in) and says whether it may output the
// input itself.
func (a *keyAnalysis) term(t *gojq.Term, in bool) bool {
	if t == nil || !in || a.failed {
		return false
	}
	out := false
	switch t.Type {
	case gojq.TermTypeIdentity:
		out = true
	case gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse, gojq.TermTypeNumber, gojq.TermTypeBreak:
	case gojq.TermTypeString:
		a.noInput(t.Str.Queries...)
	case gojq.TermTypeFormat:
		if t.Str == nil {
			return a.fail() // @base64 and the like format the input
		}
		a.noInput(t.Str.Queries...)
	case gojq.TermTypeIndex:
		if !a.index(t.Index) {
			return a.fail()
		}
	case gojq.TermTypeFunc:
		out = a.function(t.Func)
	case gojq.TermTypeObject:
		for _, kv := range t.Object.KeyVals {
			switch {
			case kv.KeyQuery != nil:
				a.noInput(kv.KeyQuery)
			case kv.KeyString != nil:
				a.noInput(kv.KeyString.Queries...)
				if kv.Val == nil && len(kv.KeyString.Queries) == 0 {
					a.keys[kv.KeyString.Str] = true // {"x"} is {"x": .x}
				} else if kv.Val == nil {
					return a.fail()
				}
			case kv.Val == nil && !strings.HasPrefix(kv.Key, "$"):
				a.keys[kv.Key] = true // {x} is {x: .x}
			}
			if kv.Val != nil {
				a.noInput(kv.Val)
			}
		}
	case gojq.TermTypeArray:
		a.noInput(t.Array.Query)
	case gojq.TermTypeUnary:
		if a.term(t.Unary.Term, in) {
			return a.fail()
		}
	case gojq.TermTypeIf:
		out = a.query(t.If.Then, in)
		a.noInput(t.If.Cond)
		for _, e := range t.If.Elif {
			a.noInput(e.Cond)
			out = a.query(e.Then, in) || out
		}
		if t.If.Else == nil {
			out = true // no else: the input passes through
		} else {
			out = a.query(t.If.Else, in) || out
		}
	case gojq.TermTypeTry:
		out = a.query(t.Try.Body, in) // catch gets the error, not the input
	case gojq.TermTypeReduce:
		if a.query(t.Reduce.Query, in) || !a.patterns(t.Reduce.Patterns) {
			return a.fail()
		}
		a.noInput(t.Reduce.Start) // update gets the accumulator
	case gojq.TermTypeForeach:
		if a.query(t.Foreach.Query, in) || !a.patterns(t.Foreach.Patterns) {
			return a.fail()
		}
		a.noInput(t.Foreach.Start) // update and extract get the state
	case gojq.TermTypeLabel:
		out = a.query(t.Label.Body, in)
	case gojq.TermTypeQuery:
		out = a.query(t.Query, in)
	default: // .. (recurse) and anything newer
		return a.fail()
	}
	for _, s := range t.SuffixList {
		switch {
		case s.Index != nil && out:
			if !a.index(s.Index) {
				return a.fail()
			}
			out = false
		case s.Index != nil:
			// .a[.b]: the index is computed from the term's input.
			a.noInput(s.Index.Start, s.Index.End)
			if s.Index.Str != nil {
				a.noInput(s.Index.Str.Queries...)
			}
		case s.Iter && out:
			return a.fail() // .[] of the input
		}
	}
	return out && !a.failed
}

// index analyses an index of the input: only a constant name is allowed,
// and it names a key.
func (a *keyAnalysis) index(x *gojq.Index) bool {
	switch {
	case x.IsSlice || x.End != nil:
		return false
	case x.Name != "":
		a.keys[x.Name] = true
		return true
	case x.Str != nil && len(x.Str.Queries) == 0:
		a.keys[x.Str.Str] = true
		return true
	case x.Start != nil && x.Start.Term != nil && x.Start.Term.Type == gojq.TermTypeString &&
		len(x.Start.Term.Str.Queries) == 0 && len(x.Start.Term.SuffixList) == 0 && x.Start.Left == nil && len(x.Start.Patterns) == 0:
		a.keys[x.Start.Term.Str.Str] = true // .["x"]
		return true
	}
	return false
}

// inputFree names functions that do not look at their input.
var inputFree = map[string]bool{
	"empty": true, "not": true, "null": true, "true": true, "false": true,
	"now": true, "env": true, "input_line_number": true, "$__loc__": true,
	"halt": true, "builtins": true,
}

// function analyses a call with the input and says whether it may output
// the input itself.
func (a *keyAnalysis) function(fn *gojq.Func) bool {
	switch {
	case strings.HasPrefix(fn.Name, "$"):
		return false // variables never hold the input (see query)
	case fn.Name == "select" && len(fn.Args) == 1:
		a.noInput(fn.Args[0])
		return true
	case inputFree[fn.Name] && len(fn.Args) == 0:
		return false
	}
	return a.fail() // any other function may read the whole input
}

// noInput analyses queries that get the input and must not output it.
func (a *keyAnalysis) noInput(qs ...*gojq.Query) {
	for _, q := range qs {
		if a.query(q, true) {
			a.fail()
		}
	}
}
