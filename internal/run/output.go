package run

import (
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// outputs are the pipes of one run's stdout and stderr and the goroutines
// copying them into their line writers.
//
// os/exec would make the same pipes for a Cmd whose Stdout and Stderr are
// not files, but it sets each end non-blocking, registers it with the
// poller and sets it blocking again, and opens /dev/null anew for stdin:
// about thirty system calls a run that these pipes do without.
type outputs struct {
	stdoutR, stdoutW *os.File
	stderrR, stderrW *os.File
	copying          sync.WaitGroup
	done             chan struct{} // closed when both copies have ended
}

// copyBuffers hold the copies' buffers between runs.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// newOutputs makes the pipes and starts copying them into stdout and
// stderr. The write ends go to the hook; call started once it runs, and
// close in any case.
func newOutputs(stdout, stderr io.Writer) (*outputs, error) {
	o := &outputs{done: make(chan struct{})}
	var err error
	if o.stdoutR, o.stdoutW, err = hookPipe(); err != nil {
		return nil, err
	}
	if o.stderrR, o.stderrW, err = hookPipe(); err != nil {
		o.close()
		return nil, err
	}
	o.copying.Add(2)
	go o.copy(stdout, o.stdoutR)
	go o.copy(stderr, o.stderrR)
	go func() {
		o.copying.Wait()
		close(o.done)
	}()
	return o, nil
}

// hookPipe returns a pipe whose read end the runtime's poller reads and
// whose write end, blocking as programs expect, is for the hook.
func hookPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return nil, nil, fmt.Errorf("creating a pipe for the hook's output: %w", err)
	}
	if err := syscall.SetNonblock(p[1], false); err != nil {
		_ = syscall.Close(p[0])
		_ = syscall.Close(p[1])
		return nil, nil, fmt.Errorf("creating a pipe for the hook's output: %w", err)
	}
	return os.NewFile(uintptr(p[0]), "hook-output"), os.NewFile(uintptr(p[1]), "hook-output"), nil
}

// copy copies r into w until every writer has closed r's pipe, or r is
// closed.
func (o *outputs) copy(w io.Writer, r *os.File) {
	defer o.copying.Done()
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// The struct hides os.File's WriteTo, which would bring its own buffer.
	_, _ = io.CopyBuffer(w, struct{ io.Reader }{r}, *buf)
}

// started closes the operator's copies of the write ends, so that the
// copies end when the hook and whatever it started have closed theirs.
func (o *outputs) started() {
	_ = o.stdoutW.Close()
	_ = o.stderrW.Close()
}

// wait waits for the copies to end, at most grace. When a process the hook
// started still holds the pipes after that, it stops reading them and
// returns false.
func (o *outputs) wait(grace time.Duration) bool {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-o.done:
		return true
	case <-t.C:
	}
	_ = o.stdoutR.Close()
	_ = o.stderrR.Close()
	<-o.done
	return false
}

// close closes every end still open and waits for the copies.
func (o *outputs) close() {
	for _, f := range []*os.File{o.stdoutR, o.stdoutW, o.stderrR, o.stderrW} {
		if f != nil {
			_ = f.Close() // os.ErrClosed for the ends already closed
		}
	}
	if o.stderrR != nil {
		<-o.done
	}
}
