package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hook-operator/hook-operator/internal/cli/debug"
	"github.com/hook-operator/hook-operator/internal/procfs"
)

// A replica is one slot of the three: the operator process now in it (a
// killed one is started again with the same identity and ports).
type replica struct {
	id      string
	args    []string
	env     []string
	tmpDir  string
	logPath string

	mu          sync.Mutex
	cmd         *exec.Cmd
	started     time.Time
	done        chan struct{}
	metricsAddr string
	panics      []string
	// stopping is set while the harness stops the process itself; an exit
	// without it is restarted after a second, as the kubelet restarts a
	// container, and recorded in exits.
	stopping bool
	exits    []string
}

// addressField is the address in the log line about the /metrics listener.
var addressField = regexp.MustCompile(`"address":"([^"]+)"`)

// start starts the operator in the slot, unless one runs there already;
// its log is appended to logPath.
func (r *replica) start() error {
	r.mu.Lock()
	running := r.done != nil && !isClosed(r.done)
	r.stopping = false
	r.mu.Unlock()
	if running {
		return nil
	}
	logFile, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return err
	}
	cmd := exec.Command(r.args[0], r.args[1:]...)
	cmd.Env = append(os.Environ(), r.env...)
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		logFile.Close()
		return fmt.Errorf("start replica %s: %w", r.id, err)
	}
	pw.Close()
	done := make(chan struct{})
	r.mu.Lock()
	r.cmd, r.started, r.done, r.metricsAddr = cmd, time.Now(), done, ""
	r.mu.Unlock()
	go func() {
		r.read(pr, logFile)
		pr.Close()
		logFile.Close()
		err := cmd.Wait()
		r.mu.Lock()
		restart := !r.stopping
		if restart {
			r.exits = append(r.exits, fmt.Sprintf("%s exited by itself at %s (%v); restarted", r.id, time.Now().UTC().Format("15:04:05"), err))
		}
		r.mu.Unlock()
		close(done)
		if restart {
			time.Sleep(time.Second)
			r.mu.Lock()
			again := !r.stopping
			r.mu.Unlock()
			if again {
				_ = r.start()
			}
		}
	}()
	return nil
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// read copies the log to the file, noting the /metrics address and any
// panic.
func (r *replica) read(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(out, line)
		r.mu.Lock()
		if r.metricsAddr == "" && strings.Contains(line, "serving /metrics") {
			if m := addressField.FindStringSubmatch(line); m != nil {
				r.metricsAddr = m[1]
			}
		}
		if strings.HasPrefix(line, "panic:") || strings.Contains(line, "fatal error:") || strings.Contains(line, `"panic"`) {
			r.panics = append(r.panics, line)
		}
		r.mu.Unlock()
	}
}

// pid returns the running process's id, or 0.
func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	select {
	case <-r.done:
		return 0
	default:
		return r.cmd.Process.Pid
	}
}

// signal sends sig and waits up to timeout for the process to end.
func (r *replica) signal(sig syscall.Signal, timeout time.Duration) error {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.stopping = true
	r.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("replica %s did not exit within %s of %s; killed", r.id, timeout, sig)
	}
}

// metrics reads the named series (without labels, or with the given label
// text) from the replica's /metrics.
func (r *replica) metrics(ctx context.Context, names ...string) (map[string]float64, error) {
	r.mu.Lock()
	addr := r.metricsAddr
	r.mu.Unlock()
	if addr == "" {
		return nil, fmt.Errorf("replica %s: no /metrics address in its log yet", r.id)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, n := range names {
			if rest, ok := strings.CutPrefix(line, n+" "); ok {
				if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
					out[n] += v
				}
			}
		}
	}
	return out, sc.Err()
}

// A procSample is what /proc says about one replica's process and its
// descendants.
type procSample struct {
	RSS      int64
	RSSAnon  int64 // RssAnon: heap, stacks, the runtime's own memory
	RSSFile  int64 // RssFile: the binary's and libraries' pages read so far
	FDs      int
	Children int // descendants, however deep (hook runs and what they start)
	Zombies  int // descendants in state Z
	TmpFiles int // entries under the replica's --tmp-dir, however deep
	TmpTop   int // entries directly under it: the operators' own dirs
	TmpDirs  int // run dirs, the entries of those but their lock files
}

// sampleProc reads /proc for pid and walks /proc for its descendants.
func sampleProc(pid int, tmpDir string) (procSample, error) {
	var s procSample
	m, err := procfs.ReadMemory(pid)
	if err != nil {
		return s, err
	}
	s.RSS, s.RSSAnon, s.RSSFile = m.RSS, m.Anon, m.File
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.FDs = len(fds)
	stats, err := procfs.ReadAll()
	if err != nil {
		return s, err
	}
	for _, d := range procfs.Descendants(pid, procfs.Parents(stats)) {
		s.Children++
		if stats[d].State == 'Z' {
			s.Zombies++
		}
	}
	if top, err := os.ReadDir(tmpDir); err == nil {
		s.TmpTop = len(top)
		for _, e := range top {
			if inside, err := os.ReadDir(filepath.Join(tmpDir, e.Name())); err == nil {
				for _, e2 := range inside {
					if e2.Name() != ".lock" {
						s.TmpDirs++
					}
				}
			}
		}
	}
	_ = filepath.WalkDir(tmpDir, func(path string, _ os.DirEntry, err error) error {
		if err == nil && path != tmpDir {
			s.TmpFiles++
		}
		return nil
	})
	return s, nil
}

// saveHeapProfiles saves each running replica's heap profile (pprof, from its
// debug socket) as <results>/<start>-<replica>-<pid>-heap-<when>.pb.gz, for
// `go tool pprof -base` between the end of the warm-up and the end when a
// process grows. Best effort: a replica a fault has just stopped has none.
func (s *soak) saveHeapProfiles(ctx context.Context, results, when string) {
	stem := filepath.Join(results, s.start.UTC().Format("2006-01-02T15-04-05Z"))
	if err := os.MkdirAll(results, 0o755); err != nil {
		logf("heap profiles: %v", err)
		return
	}
	for _, r := range s.replicas {
		pid := r.pid()
		if pid == 0 {
			continue
		}
		profile, err := debug.Request(ctx, debug.Flags{Socket: filepath.Join(s.dir, r.id+".sock")}, http.MethodGet, "/debug/pprof/heap")
		if err == nil {
			err = os.WriteFile(fmt.Sprintf("%s-%s-%d-heap-%s.pb.gz", stem, r.id, pid, when), profile, 0o644)
		}
		if err != nil {
			logf("heap profile of %s: %v", r.id, err)
		}
	}
}
