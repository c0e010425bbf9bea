package main

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A command name with spaces and a parenthesis, as /proc writes it.
	data := []byte("4242 (bench-go (x)) S 4000 4242 4000 0 -1 4194560 100 0 0 0 7 3 25 5 20 0 1 0 12345 1000 200\n")
	s, err := parseStat(data)
	if err != nil {
		t.Fatal(err)
	}
	if s.PPid != 4000 || s.Self != 100*time.Millisecond || s.Children != 300*time.Millisecond {
		t.Errorf("parseStat = %+v, want parent 4000, self 10 ticks, children 30 ticks", s)
	}
	for _, bad := range []string{"", "1 (x) S 2 3", "1 (x) S p 3 4 5 6 7 8 9 10 11 12 13 14 15 16"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) should fail", bad)
		}
	}
}

func TestDescendants(t *testing.T) {
	// 10 is the operator; 11 a resident hook, 12 the jq it runs; 13 a
	// one-shot run; 20 and 21 someone else's.
	parents := map[int]int{10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20}
	if got := descendants(10, parents); !slices.Equal(got, []int{11, 12, 13}) {
		t.Errorf("descendants(10) = %v, want [11 12 13]", got)
	}
	if got := descendants(12, parents); len(got) != 0 {
		t.Errorf("descendants of a leaf = %v, want none", got)
	}
}

func TestTreeCPU(t *testing.T) {
	ms := time.Millisecond
	stats := map[int]procStat{
		10: {PPid: 1, Self: 100 * ms, Children: 40 * ms}, // the operator, with reaped one-shot runs
		11: {PPid: 10, Self: 20 * ms, Children: 5 * ms},  // a resident hook and the jq it reaped
		12: {PPid: 11, Self: 1 * ms},                     // a jq still running
		20: {PPid: 1, Self: 999 * ms},                    // not the operator's
	}
	got, err := treeCPU(10, stats)
	if err != nil {
		t.Fatal(err)
	}
	if want := 166 * ms; got != want {
		t.Errorf("treeCPU = %v, want %v: the operator's, its reaped runs', and its live descendants' with theirs", got, want)
	}
	if _, err := treeCPU(99, stats); err == nil {
		t.Error("treeCPU of a process not in /proc should fail")
	}
}

// TestReadOwnTree finds a child of the test process, as the harness finds
// an operator's resident hooks, in the real /proc.
func TestReadOwnTree(t *testing.T) {
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	stats, err := readStats()
	if err != nil {
		t.Fatal(err)
	}
	if got := descendants(os.Getpid(), parentsOf(stats)); !slices.Contains(got, child.Process.Pid) {
		t.Errorf("descendants of the test process = %v, want the child %d among them", got, child.Process.Pid)
	}
	rss, n, err := descendantsRSS(os.Getpid())
	if err != nil || n < 1 || rss <= 0 {
		t.Errorf("descendantsRSS = %d bytes in %d process(es), %v; want the child's", rss, n, err)
	}
	if _, err := treeCPU(os.Getpid(), stats); err != nil {
		t.Error(err)
	}
}
