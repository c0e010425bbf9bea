package procfs

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

const status = `Name:	hook-operator
VmPeak:	 1300000 kB
VmHWM:	   57320 kB
VmRSS:	   41000 kB
RssAnon:	   16000 kB
RssFile:	   25000 kB
RssShmem:	       0 kB
Threads:	12
`

func TestParseStatus(t *testing.T) {
	m, err := ParseStatus([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	want := Memory{RSS: 41000 << 10, Peak: 57320 << 10, Anon: 16000 << 10, File: 25000 << 10}
	if m != want {
		t.Errorf("ParseStatus = %+v, want %+v", m, want)
	}
	if _, err := ParseStatus([]byte("Name:\tzombie\nState:\tZ (zombie)\n")); err == nil {
		t.Error("a status without VmRSS should be an error")
	}
	if _, err := ParseStatus([]byte("VmRSS:\t12 MB\nVmHWM:\t12 kB\n")); err == nil {
		t.Error("a unit other than kB should be an error")
	}
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses, as /proc writes it;
	// utime 7, stime 3, cutime 25, cstime 5 ticks.
	data := []byte("4242 (bench-go (x) y) Z 4000 4242 4000 0 -1 4194560 100 0 0 0 7 3 25 5 20 0 1 0 12345 1000 200\n")
	s, err := ParseStat(data)
	if err != nil {
		t.Fatal(err)
	}
	if s.PPid != 4000 || s.State != 'Z' || s.Self != 100*time.Millisecond || s.Children != 300*time.Millisecond {
		t.Errorf("ParseStat = %+v, want parent 4000, state Z, self 10 ticks, children 30 ticks", s)
	}
	for _, bad := range []string{"", "1 (x) S 2 3", "1 (x) S p 3 4 5 6 7 8 9 10 11 12 13 14 15 16"} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) should fail", bad)
		}
	}
}

func TestDescendants(t *testing.T) {
	// 10 is the operator; 11 a resident hook, 12 the jq it runs; 13 a
	// one-shot run; 20 and 21 someone else's; 30 and 31 a loop, as a
	// table read while pids are reused could hold.
	parents := map[int]int{10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20, 30: 31, 31: 30}
	if got := Descendants(10, parents); !slices.Equal(got, []int{11, 12, 13}) {
		t.Errorf("Descendants(10) = %v, want [11 12 13]", got)
	}
	if got := Descendants(12, parents); len(got) != 0 {
		t.Errorf("descendants of a leaf = %v, want none", got)
	}
	if got := Descendants(30, parents); !slices.Equal(got, []int{31}) {
		t.Errorf("Descendants(30) in a loop = %v, want [31]", got)
	}
}

func TestTreeCPU(t *testing.T) {
	ms := time.Millisecond
	stats := map[int]Stat{
		10: {PPid: 1, Self: 100 * ms, Children: 40 * ms}, // the operator, with reaped one-shot runs
		11: {PPid: 10, Self: 20 * ms, Children: 5 * ms},  // a resident hook and the jq it reaped
		12: {PPid: 11, Self: 1 * ms},                     // a jq still running
		20: {PPid: 1, Self: 999 * ms},                    // not the operator's
	}
	got, err := TreeCPU(10, stats)
	if err != nil {
		t.Fatal(err)
	}
	if want := 166 * ms; got != want {
		t.Errorf("TreeCPU = %v, want %v: the operator's, its reaped runs', and its live descendants' with theirs", got, want)
	}
	if _, err := TreeCPU(99, stats); err == nil {
		t.Error("TreeCPU of a process not in /proc should fail")
	}
}

// TestReadOwnTree reads the test process and a child of it in the real
// /proc, as the harnesses read an operator and its resident hooks.
func TestReadOwnTree(t *testing.T) {
	m, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.Peak < m.RSS || m.Anon <= 0 {
		t.Errorf("own memory %+v: want 0 < RSS <= Peak, and some anonymous memory", m)
	}
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal("starting sleep:", err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	stats, err := ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := Descendants(os.Getpid(), Parents(stats)); !slices.Contains(got, child.Process.Pid) {
		t.Errorf("descendants of the test process = %v, want the child %d among them", got, child.Process.Pid)
	}
	if s := stats[child.Process.Pid]; s.PPid != os.Getpid() || s.State == 0 {
		t.Errorf("the child's stat = %+v, want parent %d and a state", s, os.Getpid())
	}
	rss, n, err := DescendantsRSS(os.Getpid())
	if err != nil || n < 1 || rss <= 0 {
		t.Errorf("DescendantsRSS = %d bytes in %d process(es), %v; want the child's", rss, n, err)
	}
	if _, err := TreeCPU(os.Getpid(), stats); err != nil {
		t.Error(err)
	}
}
