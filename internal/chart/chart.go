// Package chart holds what the bench's and the soak's `chart` commands
// share: the command line (an --out flag and one results file), thinning a
// line to a bounded number of points, and writing a plot as an SVG of the
// size the docs show.
package chart

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Width and Height are the size of every chart the commands write.
const (
	Width  = 8 * vg.Inch
	Height = 4.5 * vg.Inch
)

// A Command is a program's `chart` subcommand: it reads one results file
// and writes one chart of it.
type Command struct {
	// Name is the command as typed, "bench chart", for its flag set.
	Name string
	// Usage is what -h prints above the flags: the usage line and what
	// the chart shows.
	Usage string
	// Out is the SVG written when --out is not given.
	Out string
	// In is the results file read when none is named. Empty makes naming
	// one required, and Need is then the error's advice on which to name.
	In, Need string
	// Logf, if set, logs the chart written, in the program's own format.
	Logf func(format string, args ...any)
}

// Run parses args (--out and the results file), hands the results file to
// draw and writes the plot it returns to the output file as an SVG; -h
// returns flag.ErrHelp. draw's errors come back as they are, so draw says
// which file they are about.
func (c Command) Run(args []string, draw func(in string) (*plot.Plot, error)) error {
	in, out, err := c.parse(args)
	if err != nil {
		return err
	}
	p, err := draw(in)
	if err != nil {
		return err
	}
	if err := Write(p, out); err != nil {
		return err
	}
	if c.Logf != nil {
		c.Logf("wrote %s from %s", out, in)
	}
	return nil
}

// parse returns the results file to read and the SVG to write.
func (c Command) parse(args []string) (in, out string, err error) {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	outFlag := fs.String("out", c.Out, "the SVG to write")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), c.Usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return "", "", err
	}
	switch {
	case c.In == "" && fs.NArg() != 1:
		return "", "", errors.New("chart: " + c.Need)
	case fs.NArg() > 1:
		return "", "", fmt.Errorf("chart: one results file at most, got %q", fs.Args())
	case fs.NArg() == 1:
		return fs.Arg(0), *outFlag, nil
	}
	return c.In, *outFlag, nil
}

// Write writes p to path as an SVG of Width by Height, whatever path's
// extension, making path's folder first.
func Write(p *plot.Plot, path string) error {
	svg, err := SVG(p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, svg, 0o644)
}

// SVG draws p as the SVG that Write writes; tests look in it for the text
// a chart shows.
func SVG(p *plot.Plot) ([]byte, error) {
	w, err := p.WriterTo(Width, Height, "svg")
	if err != nil {
		return nil, err
	}
	var svg bytes.Buffer
	if _, err := w.WriteTo(&svg); err != nil {
		return nil, err
	}
	return svg.Bytes(), nil
}

// Thin keeps at most points of xys, evenly spaced by index, the first and
// the last among them: point i is xys[i·(n−1)/(points−1)]. A line of no
// more than points, or a bound under two, comes back whole.
func Thin(xys plotter.XYs, points int) plotter.XYs {
	n := len(xys)
	if n <= points || points < 2 {
		return xys
	}
	out := make(plotter.XYs, 0, points)
	for i := range points {
		out = append(out, xys[i*(n-1)/(points-1)])
	}
	return out
}
