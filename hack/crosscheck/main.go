// Command crosscheck type-checks the module's packages, their tests and
// every package they import, from source, for other platforms than this
// machine's, and runs go vet's analyzers on the module's packages: what
// `GOOS=… GOARCH=… go build` and `go vet` would find wrong in our code
// there (an identifier defined only on some systems, a field whose type
// differs between architectures, an unused import behind a build tag, a
// vet finding in a file built only there), without compiling the whole
// dependency tree once per platform. make test runs it for every platform of CROSS_PLATFORMS but
// the one it builds for real (docs/development.md).
//
// Usage, from the module's root:
//
//	go -C hack/crosscheck run . [-dir ../..] [-tests=false] GOOS/GOARCH... [-- PATTERN...]
//
// The patterns, relative to -dir (default: the working dir), default to
// ./... . It exits 1 when a package has an error,
// listing each with its file and line, and 2 on bad usage.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"
)

func main() {
	tests := flag.Bool("tests", true, "check the packages' test files too")
	dir := flag.String("dir", "", "the dir the patterns are relative to (default: the working dir)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: crosscheck [-dir DIR] [-tests=false] GOOS/GOARCH... [-- PATTERN...] (patterns default to ./...)")
		flag.PrintDefaults()
	}
	flag.Parse()
	platforms, patterns := split(flag.Args())
	if len(platforms) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok || goos == "" || goarch == "" {
			fmt.Fprintf(os.Stderr, "crosscheck: %q: name a platform as GOOS/GOARCH, such as darwin/arm64\n", p)
			os.Exit(2)
		}
		start := time.Now()
		errs, n, err := check(*dir, goos, goarch, *tests, patterns)
		if err != nil {
			fmt.Fprintf(os.Stderr, "crosscheck: %s: %v\n", p, err)
			os.Exit(2)
		}
		for _, e := range errs {
			fmt.Fprintf(os.Stderr, "%s: %s\n", p, e)
		}
		fmt.Printf("crosscheck: %s: %d packages type-checked in %.1fs, %d errors\n", p, n, time.Since(start).Seconds(), len(errs))
		failed = failed || len(errs) > 0
	}
	if failed {
		os.Exit(1)
	}
}

// split parses the arguments: platforms, then patterns after "--".
func split(args []string) (platforms, patterns []string) {
	if i := slices.Index(args, "--"); i >= 0 {
		platforms, patterns = args[:i], args[i+1:]
	} else {
		platforms = args
	}
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	return platforms, patterns
}

// check loads patterns for goos/goarch with cgo off, as the release builds,
// every package type-checked from source (so nothing is compiled), runs
// vet's analyzers on the packages the patterns name, and returns the errors
// of every package loaded and the analyzers' findings, each once (a test
// variant repeats its package's), and how many packages it checked.
func check(dir, goos, goarch string, tests bool, patterns []string) ([]string, int, error) {
	cfg := &packages.Config{
		Mode:  packages.LoadAllSyntax | packages.NeedModule,
		Dir:   dir,
		Env:   append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly"),
		Tests: tests,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, 0, err
	}
	seen := map[string]bool{}
	var errs []string
	n := 0
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		n++
		for _, e := range p.Errors {
			errs = appendOnce(errs, seen, e.Error())
		}
	})
	// vet runs on the packages that type-check, as go vet does.
	var roots []*packages.Package
	for _, p := range pkgs {
		if !p.IllTyped && !strings.HasSuffix(p.ID, ".test") { // not the generated test main
			roots = append(roots, p)
		}
	}
	if len(roots) == 0 {
		return errs, n, nil
	}
	graph, err := checker.Analyze(vetAnalyzers, roots, nil)
	if err != nil {
		return nil, n, err
	}
	for act := range graph.All() {
		if !act.IsRoot {
			continue
		}
		if act.Err != nil {
			errs = appendOnce(errs, seen, fmt.Sprintf("%s: %s: %v", act.Package.PkgPath, act.Analyzer.Name, act.Err))
		}
		for _, d := range act.Diagnostics {
			errs = appendOnce(errs, seen, fmt.Sprintf("%s: %s (%s)", act.Package.Fset.Position(d.Pos), d.Message, act.Analyzer.Name))
		}
	}
	return errs, n, nil
}

func appendOnce(list []string, seen map[string]bool, s string) []string {
	if seen[s] {
		return list
	}
	seen[s] = true
	return append(list, s)
}
