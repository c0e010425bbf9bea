package transcript

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// Formats are the output formats of Writer.
var Formats = []string{"json", "yaml"}

// Writer prints runs one by one: JSON writes one run per line (JSON
// Lines); YAML writes one document per run, each starting with "---".
type Writer struct {
	w      io.Writer
	format string
}

// NewWriter returns a writer in format ("json" or "yaml").
func NewWriter(w io.Writer, format string) (*Writer, error) {
	switch format {
	case "json", "yaml":
		return &Writer{w: w, format: format}, nil
	}
	return nil, fmt.Errorf("output format %q: use json or yaml", format)
}

// Write prints one run.
func (w *Writer) Write(r Run) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if w.format == "json" {
		_, err = w.w.Write(append(data, '\n'))
		return err
	}
	y, err := yaml.JSONToYAML(data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w.w, "---\n%s", y)
	return err
}
