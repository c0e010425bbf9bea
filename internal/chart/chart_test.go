package chart

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

func TestThin(t *testing.T) {
	line := make(plotter.XYs, 1000)
	for i := range line {
		line[i] = plotter.XY{X: float64(i), Y: float64(2 * i)}
	}
	got := Thin(line, 11)
	if len(got) != 11 {
		t.Fatalf("%d points, want 11", len(got))
	}
	if got[0] != line[0] || got[10] != line[999] {
		t.Errorf("ends %v and %v, want the line's first and last points", got[0], got[10])
	}
	// Evenly spaced by index: point i is line[i·999/10].
	for i, pt := range got {
		if want := line[i*999/10]; pt != want {
			t.Errorf("point %d is %v, want %v", i, pt, want)
		}
	}
	if short := Thin(line[:5], 11); len(short) != 5 {
		t.Errorf("a line of 5 thinned to 11: %d points, want all 5", len(short))
	}
	if whole := Thin(line, 1); len(whole) != 1000 {
		t.Errorf("a bound of 1: %d points, want the whole line (one point cannot hold both ends)", len(whole))
	}
}

func TestCommandParse(t *testing.T) {
	withDefault := Command{Name: "bench chart", Out: "docs/img/b.svg", In: "results/latest.json"}
	required := Command{Name: "soak chart", Out: "docs/img/s.svg", Need: "name one saved run"}
	for _, tc := range []struct {
		name    string
		cmd     Command
		args    []string
		in, out string
		err     string
	}{
		{name: "defaults", cmd: withDefault, in: "results/latest.json", out: "docs/img/b.svg"},
		{name: "named", cmd: withDefault, args: []string{"--out", "x.svg", "r.json"}, in: "r.json", out: "x.svg"},
		{name: "two files", cmd: withDefault, args: []string{"a.json", "b.json"}, err: `chart: one results file at most, got ["a.json" "b.json"]`},
		{name: "required, named", cmd: required, args: []string{"r.json"}, in: "r.json", out: "docs/img/s.svg"},
		{name: "required, none", cmd: required, err: "chart: name one saved run"},
		{name: "required, two", cmd: required, args: []string{"a.json", "b.json"}, err: "chart: name one saved run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, out, err := tc.cmd.parse(tc.args)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if in != tc.in || out != tc.out {
				t.Errorf("read %q, write %q; want %q and %q", in, out, tc.in, tc.out)
			}
		})
	}
}

func TestCommandRun(t *testing.T) {
	dir := t.TempDir()
	p := plot.New()
	p.Title.Text = "a chart of nothing"
	var logged []string
	cmd := Command{Name: "test chart", In: "results.json", Logf: func(format string, args ...any) {
		logged = append(logged, fmt.Sprintf(format, args...))
	}}
	out := filepath.Join(dir, "new", "folder", "c.svg")
	var drawn string
	err := cmd.Run([]string{"--out", out}, func(in string) (*plot.Plot, error) {
		drawn = in
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if drawn != "results.json" {
		t.Errorf("drew %q, want the default results file", drawn)
	}
	if want := "wrote " + out + " from results.json"; len(logged) != 1 || logged[0] != want {
		t.Errorf("logged %q, want %q", logged, want)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := SVG(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || !strings.Contains(string(got), "<svg") || !strings.Contains(string(got), "a chart of nothing") {
		t.Errorf("wrote %d bytes, want the SVG of the plot (%d bytes) with its title", len(got), len(want))
	}

	failed := errors.New("no samples")
	if err := cmd.Run([]string{"--out", filepath.Join(dir, "f.svg")}, func(string) (*plot.Plot, error) { return nil, failed }); !errors.Is(err, failed) {
		t.Errorf("draw failed: %v, want its error as it is", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "f.svg")); !os.IsNotExist(err) {
		t.Errorf("a chart that failed to draw left a file: %v", err)
	}
	if len(logged) != 1 {
		t.Errorf("a chart that failed to draw was logged: %q", logged)
	}
}
