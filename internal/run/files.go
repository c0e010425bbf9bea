package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Names of the environment variables that carry the file paths (contract
// section 2). The admission name is an alias of the validating one.
const (
	envBindingContext     = "BINDING_CONTEXT_PATH"
	envKubernetesPatch    = "KUBERNETES_PATCH_PATH"
	envMetrics            = "METRICS_PATH"
	envValidatingResponse = "VALIDATING_RESPONSE_PATH"
	envAdmissionResponse  = "ADMISSION_RESPONSE_PATH"
	envConversionResponse = "CONVERSION_RESPONSE_PATH"
)

// runDir is the private temp dir of one run at a time and the files in it.
//
// A run is on the path of every event, so an output file the hook left
// empty is only stat'ed, not opened, and the dir is removed file by file
// rather than listed.
type runDir struct {
	path                                             string
	contexts, patch, metrics, validating, conversion string
}

// newRunDir creates a 0700 dir under parent ("" = os.TempDir()) holding the
// binding contexts and empty output files, all 0600.
func newRunDir(parent string, contexts []byte) (*runDir, error) {
	path, err := os.MkdirTemp(parent, "hook-run-")
	if err != nil {
		return nil, fmt.Errorf("creating the run's temp dir: %w", err)
	}
	d := &runDir{
		path:       path,
		contexts:   filepath.Join(path, "binding-context.json"),
		patch:      filepath.Join(path, "kubernetes-patch"),
		metrics:    filepath.Join(path, "metrics"),
		validating: filepath.Join(path, "validating-response"),
		conversion: filepath.Join(path, "conversion-response"),
	}
	for _, name := range []string{d.patch, d.metrics, d.validating, d.conversion} {
		if err := createFile(name, nil); err != nil {
			_ = d.remove()
			return nil, fmt.Errorf("preparing the run's files: %w", err)
		}
	}
	if err := d.writeContexts(contexts); err != nil {
		_ = d.remove()
		return nil, fmt.Errorf("preparing the run's files: %w", err)
	}
	return d, nil
}

// writeContexts writes the binding contexts file of d, which must not
// exist: "[]" when there are none.
func (d *runDir) writeContexts(contexts []byte) error {
	if len(contexts) == 0 {
		contexts = []byte("[]")
	}
	return createFile(d.contexts, contexts)
}

// createFile creates name, which must not exist, 0600, holding content.
func createFile(name string, content []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if len(content) > 0 {
		if _, err := f.Write(content); err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}

// env returns base without any variables of the contract's names, plus those
// variables pointing into d.
func (d *runDir) env(base []string) []string {
	own := map[string]string{
		envBindingContext:     d.contexts,
		envKubernetesPatch:    d.patch,
		envMetrics:            d.metrics,
		envValidatingResponse: d.validating,
		envAdmissionResponse:  d.validating,
		envConversionResponse: d.conversion,
	}
	env := make([]string, 0, len(base)+len(own))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := own[name]; !ok {
			env = append(env, kv)
		}
	}
	for _, name := range []string{envBindingContext, envKubernetesPatch, envMetrics, envValidatingResponse, envAdmissionResponse, envConversionResponse} {
		env = append(env, name+"="+own[name])
	}
	return env
}

// readOutputs fills res from the output files. A file the hook removed
// counts as empty; so does anything that is not a regular file (a FIFO
// left in place of an output would otherwise block the read).
func (d *runDir) readOutputs(res *Result) error {
	for _, out := range []struct {
		path string
		dst  *[]byte
	}{
		{d.patch, &res.Operations},
		{d.metrics, &res.Metrics},
		{d.validating, &res.ValidatingResponse},
		{d.conversion, &res.ConversionResponse},
	} {
		st, err := os.Stat(out.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading output file: %w", err)
		}
		if !st.Mode().IsRegular() || st.Size() == 0 {
			continue
		}
		b, err := os.ReadFile(out.path)
		if err != nil {
			return fmt.Errorf("reading output file: %w", err)
		}
		*out.dst = b
	}
	return nil
}

// remove removes the dir: the run's own files one by one, then the dir,
// and whatever else the hook left in it only when there is anything.
func (d *runDir) remove() error {
	for _, name := range []string{d.contexts, d.patch, d.metrics, d.validating, d.conversion} {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return os.RemoveAll(d.path) // e.g. the hook made a dir of that name
		}
	}
	if err := os.Remove(d.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return os.RemoveAll(d.path)
	}
	return nil
}
