package run

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// runDir is the private temp dir of one run and the files in it.
//
// The files are made and read with plain system calls rather than os.File:
// every os.File open also tries to register the file with the runtime's
// poller (four fcntl calls and a failing epoll_ctl for a regular file), and
// a run is on the path of every event. An output file the hook left empty
// is not opened at all.
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
	if len(contexts) == 0 {
		contexts = []byte("[]")
	}
	for _, f := range []struct {
		name    string
		content []byte
	}{{d.contexts, contexts}, {d.patch, nil}, {d.metrics, nil}, {d.validating, nil}, {d.conversion, nil}} {
		if err := createFile(f.name, f.content); err != nil {
			_ = d.remove()
			return nil, fmt.Errorf("preparing the run's files: %w", err)
		}
	}
	return d, nil
}

// createFile creates name, which must not exist, 0600, holding content.
func createFile(name string, content []byte) error {
	fd, err := ignoringEINTR(func() (int, error) {
		return syscall.Open(name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
	})
	if err != nil {
		return &fs.PathError{Op: "create", Path: name, Err: err}
	}
	for len(content) > 0 {
		n, err := ignoringEINTR(func() (int, error) { return syscall.Write(fd, content) })
		if err != nil {
			_ = syscall.Close(fd)
			return &fs.PathError{Op: "write", Path: name, Err: err}
		}
		content = content[n:]
	}
	if err := syscall.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: name, Err: err}
	}
	return nil
}

func ignoringEINTR(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if err != syscall.EINTR {
			return n, err
		}
	}
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
		var st syscall.Stat_t
		if err := syscall.Stat(out.path, &st); err != nil {
			if err == syscall.ENOENT {
				continue
			}
			return fmt.Errorf("reading output file: %w", &fs.PathError{Op: "stat", Path: out.path, Err: err})
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size == 0 {
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
		if err := syscall.Unlink(name); err != nil && err != syscall.ENOENT {
			return os.RemoveAll(d.path) // e.g. the hook made a dir of that name
		}
	}
	if err := syscall.Rmdir(d.path); err != nil && err != syscall.ENOENT {
		return os.RemoveAll(d.path)
	}
	return nil
}
