package ops

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// Parse reads the operations of a file: a stream of JSON objects, or a
// multi-document YAML stream (documents separated by "---" lines). A
// document that is an array holds several operations, in order. An empty
// file, and empty documents, hold none.
//
// Every operation is validated: its type, the fields that type requires and
// accepts, the fields' types, jq programs and patches. Nothing that needs the
// cluster is checked here (that kinds exist, namespaces fit them); Apply does
// that. On any problem Parse returns no operations and an error joining one
// *Error per problem found, all of them, each naming the operation's index
// and the field.
func Parse(data []byte) ([]Operation, error) {
	docs := readDocuments(data)
	var ops []Operation
	var errs []error
	index := 0
	for _, d := range docs {
		if d.err != nil {
			errs = append(errs, &Error{Index: index, Err: d.err})
			index++
			continue
		}
		for _, raw := range d.ops {
			op, opErrs := parseOperation(index, raw)
			for _, e := range opErrs {
				errs = append(errs, e)
			}
			ops = append(ops, op)
			index++
		}
	}
	if len(errs) > 0 {
		return nil, limit.Join(errs)
	}
	return ops, nil
}

// document is one document of the file: the raw JSON of its operations (one,
// or the elements of an array), or why it could not be read.
type document struct {
	ops []json.RawMessage
	err error
}

// readDocuments splits data into documents. Input that starts like JSON is
// read as a JSON stream; if that fails, it may still be YAML written in flow
// style ("{operation: Delete, ...}"), so YAML is tried before the JSON error
// is reported.
func readDocuments(data []byte) []document {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil
	}
	if trimmed[0] != '{' && trimmed[0] != '[' {
		return readYAML(data)
	}
	docs, ok := readJSON(data)
	if ok {
		return docs
	}
	yamlDocs := readYAML(data)
	for _, d := range yamlDocs {
		if d.err != nil {
			return docs
		}
	}
	return yamlDocs
}

// readJSON reads a stream of JSON values. A syntax error ends the stream:
// nothing after it can be located reliably.
func readJSON(data []byte) ([]document, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []document
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return docs, true
		}
		if err != nil {
			return append(docs, document{err: jsonSyntaxError(data, err)}), false
		}
		docs = append(docs, split(raw))
	}
}

func jsonSyntaxError(data []byte, err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		line := 1 + bytes.Count(data[:min(int(syn.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("not valid JSON (line %d): %v", line, syn)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("not valid JSON: the file ends inside a value (a missing closing brace or bracket?)")
	}
	return fmt.Errorf("not valid JSON: %w", err)
}

// readYAML reads a multi-document YAML stream. A document that is not valid
// YAML is reported and the following ones are still read.
func readYAML(data []byte) []document {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []document
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return docs
		}
		if err != nil {
			return append(docs, document{err: fmt.Errorf("not valid YAML: %w", err)})
		}
		js, err := yamlToJSON(doc)
		var tooLarge *limit.ExpansionError
		if errors.As(err, &tooLarge) {
			docs = append(docs, document{err: fmt.Errorf("YAML document: %w", err)})
			continue
		}
		if err != nil {
			hint := ""
			if strings.Contains(err.Error(), `mapping key "operation" already defined`) {
				hint = " (two operations without a --- line between them? Start every YAML document with ---)"
			}
			docs = append(docs, document{err: fmt.Errorf("not valid YAML: %w%s", err, hint)})
			continue
		}
		docs = append(docs, split(js))
	}
}

// split turns one document into its operations: an array's elements, one
// object, or none for an empty document.
func split(raw json.RawMessage) document {
	trimmed := bytes.TrimSpace(raw)
	if bytes.Equal(trimmed, []byte("null")) {
		return document{}
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(trimmed, &elems); err != nil {
			return document{err: fmt.Errorf("not valid JSON: %w", err)}
		}
		return document{ops: elems}
	}
	return document{ops: []json.RawMessage{trimmed}}
}

// Documents returns the operations of data as the hook wrote them, one raw
// JSON object per operation (array documents flattened), for printing.
// Unlike Parse it does not validate them; it fails only when a document
// cannot be read at all.
func Documents(data []byte) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for i, d := range readDocuments(data) {
		if d.err != nil {
			return nil, fmt.Errorf("document %d: %w", i, d.err)
		}
		out = append(out, d.ops...)
	}
	return out, nil
}
