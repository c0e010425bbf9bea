package hack_test

import (
	"bufio"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// Every relative link in the project's Markdown files leads somewhere: the
// file or folder exists in the repository, and an anchor (#section) names a
// heading, or an explicit anchor, of the Markdown file it points into. Links
// with a scheme (https:, mailto:) are not followed.
func TestMarkdownLinksResolve(t *testing.T) {
	root, files := trackedFiles(t)
	tracked := map[string]bool{}
	for _, f := range files {
		tracked[f] = true
		for dir := path.Dir(f); dir != "."; dir = path.Dir(dir) {
			tracked[dir] = true
		}
	}
	docs := map[string]*markdownDoc{}
	read := func(name string) *markdownDoc {
		if d, ok := docs[name]; ok {
			return d
		}
		d, err := readMarkdown(root + "/" + name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		docs[name] = d
		return d
	}
	checked := 0
	for _, name := range files {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		for _, l := range read(name).links {
			target, frag, _ := strings.Cut(l.target, "#")
			if hasScheme(target) {
				continue
			}
			checked++
			resolved := name
			if target != "" {
				resolved = path.Clean(path.Join(path.Dir(name), target))
				if strings.HasPrefix(target, "/") {
					resolved = path.Clean(strings.TrimPrefix(target, "/"))
				}
				if !tracked[resolved] {
					t.Errorf("%s:%d: link %q: %s is not a file or folder of the repository", name, l.line, l.target, resolved)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			if !read(resolved).anchors[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading or anchor %q", name, l.line, l.target, resolved, frag)
			}
		}
	}
	t.Logf("%d relative links checked", checked)
	if checked < 100 {
		t.Fatalf("only %d relative links checked; the Markdown files were not read", checked)
	}
}

// trackedFiles returns the repository's root and its tracked files.
func trackedFiles(t *testing.T) (string, []string) {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	root := strings.TrimSpace(string(top))
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		// A file deleted in the work tree but not yet in the index is gone.
		if _, err := os.Lstat(root + "/" + f); err == nil {
			files = append(files, f)
		}
	}
	return root, files
}

// markdownDoc is what the link check needs of one Markdown file.
type markdownDoc struct {
	links   []markdownLink
	anchors map[string]bool
}

type markdownLink struct {
	target string
	line   int
}

var (
	// inlineLink is [text](target) or ![alt](target "title"); the text
	// may hold one level of brackets.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef is a reference definition: [id]: target.
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

func hasScheme(target string) bool { return scheme.MatchString(target) }

// readMarkdown reads the links and anchors of a Markdown file, outside its
// fenced code blocks and code spans.
func readMarkdown(file string) (*markdownDoc, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := &markdownDoc{anchors: map[string]bool{}}
	slugs := map[string]int{}
	fence := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			d.anchors[m[1]] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := Slug(m[2])
			if i := slugs[s]; i > 0 {
				d.anchors[s+"-"+strconv.Itoa(i)] = true
			} else {
				d.anchors[s] = true
			}
			slugs[s]++
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			d.links = append(d.links, markdownLink{target: m[1], line: n})
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, "``"), -1) {
			if m[1] != "" {
				d.links = append(d.links, markdownLink{target: m[1], line: n})
			}
		}
	}
	return d, sc.Err()
}

// Slug is the anchor GitHub gives a heading: its text as rendered (link
// targets, code marks and emphasis stars dropped), lower-cased, without
// punctuation other than hyphens and underscores, spaces made hyphens.
func Slug(text string) string {
	text = inlineLink.ReplaceAllStringFunc(text, func(l string) string {
		return strings.TrimPrefix(l[:strings.LastIndex(l, "](")], "[")
	})
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, slug string }{
		{"Deletion", "deletion"},
		{"What `--dry-run` prints", "what---dry-run-prints"},
		{"1. **A manager** (its own package)", "1-a-manager-its-own-package"},
		{"See [the hooks](hooks.md#x) here", "see-the-hooks-here"},
		{"settings.sharded_key: why?", "settingssharded_key-why"},
		{"Über Änderungen", "über-änderungen"},
	} {
		if got := Slug(c.heading); got != c.slug {
			t.Errorf("Slug(%q) = %q, want %q", c.heading, got, c.slug)
		}
	}
}

func TestReadMarkdown(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/a.md"
	text := "# Title\n\nSee [b](b.md#part) and `[not](x.md)`.\n\n" +
		"```sh\n[not](y.md)\n# not a heading\n```\n\n## Title\n\n<a id=\"here\"></a>\n\n[ref]: ./e.md\n" +
		"![pic](img.png \"a picture\") [abs](https://example.com/x.md) [top](#title-1)\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := readMarkdown(file)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range d.links {
		got = append(got, l.target)
	}
	want := []string{"b.md#part", "./e.md", "img.png", "https://example.com/x.md", "#title-1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("links %q, want %q", got, want)
	}
	for _, a := range []string{"title", "title-1", "here"} {
		if !d.anchors[a] {
			t.Errorf("anchor %q missing from %v", a, d.anchors)
		}
	}
	if d.anchors["not-a-heading"] {
		t.Error("a # line in a code block was taken for a heading")
	}
}

// docs/development.md's package table names every package under internal/,
// so that a newcomer finds what each holds, and names nothing else: a row
// left behind by a package moved or deleted fails too.
func TestPackageTableComplete(t *testing.T) {
	root, files := trackedFiles(t)
	table := packageTable(t, root)
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z/.]+)` \\|").FindAllStringSubmatch(table, -1) {
		listed[m[1]] = true
	}
	seen := map[string]bool{}
	for _, f := range files {
		if !strings.HasPrefix(f, "internal/") || !strings.HasSuffix(f, ".go") {
			continue
		}
		pkg := strings.TrimPrefix(path.Dir(f), "internal/")
		if seen[pkg] || strings.Contains(pkg, "testdata") {
			continue
		}
		seen[pkg] = true
		if listed[pkg] || (pkg == "cli" || strings.HasPrefix(pkg, "cli/")) && listed["cli/..."] {
			continue
		}
		t.Errorf("internal/%s is not in the package table of docs/development.md (a row \"| `%s` | what it holds |\")", pkg, pkg)
	}
	if len(seen) < 20 {
		t.Fatalf("only %d packages found under internal/", len(seen))
	}
	for pkg := range listed {
		if !seen[pkg] && !(pkg == "cli/..." && seen["cli"]) {
			t.Errorf("the package table of docs/development.md has a row for internal/%s, which holds no Go file: remove the row, or name the package where it is now", pkg)
		}
	}
}

// packageTable returns the section of docs/development.md that holds the
// package table: from "## How the code is laid out" to the next heading.
func packageTable(t *testing.T, root string) string {
	t.Helper()
	text, err := os.ReadFile(root + "/docs/development.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	start := strings.Index(s, "\n## How the code is laid out\n")
	if start < 0 {
		t.Fatal("docs/development.md has no section \"## How the code is laid out\"")
	}
	start++
	if end := strings.Index(s[start:], "\n#"); end >= 0 {
		return s[start : start+end]
	}
	return s[start:]
}

// The index of docs/decisions.md links every decision: each "## " heading
// of the pages under docs/design/, where the records are kept by area.
func TestDecisionsIndexed(t *testing.T) {
	root, files := trackedFiles(t)
	text, err := os.ReadFile(root + "/docs/decisions.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	start := strings.Index(s, "\n## Index\n")
	if start < 0 {
		t.Fatal("docs/decisions.md has no \"## Index\" section")
	}
	index := s[start+1:]
	if end := strings.Index(index, "\n## "); end >= 0 {
		index = index[:end]
	}
	heading := regexp.MustCompile(`(?m)^## (.+)$`)
	count := 0
	for _, f := range files {
		page, ok := strings.CutPrefix(f, "docs/design/")
		if !ok || !strings.HasSuffix(page, ".md") {
			continue
		}
		text, err := os.ReadFile(root + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range heading.FindAllStringSubmatch(string(text), -1) {
			count++
			link := "(design/" + page + "#" + Slug(d[1]) + ")"
			if !strings.Contains(index, link) {
				t.Errorf("decision %q of %s is not linked from the index of docs/decisions.md: add \"[%s]%s\" under its area", d[1], f, d[1], link)
			}
		}
	}
	if count < 10 {
		t.Fatalf("only %d decisions found under docs/design/", count)
	}
}

// Every test the docs name as proof of a guarantee (`TestX`, `FuzzX`)
// exists, so that a renamed or removed test cannot leave a guarantee
// resting on nothing.
func TestDocsNameExistingTests(t *testing.T) {
	root, files := trackedFiles(t)
	defined := map[string]bool{}
	def := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]*)\(`)
	var docs []string
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, "_test.go"):
			src, err := os.ReadFile(root + "/" + f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range def.FindAllStringSubmatch(string(src), -1) {
				defined[m[1]] = true
			}
		case strings.HasSuffix(f, ".md") && !strings.HasPrefix(f, "bench/results/"):
			docs = append(docs, f)
		}
	}
	named := regexp.MustCompile("`((?:Test|Fuzz)[A-Z][A-Za-z0-9_]*)`")
	checked := 0
	for _, f := range docs {
		text, err := os.ReadFile(root + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(text), -1) {
			checked++
			if !defined[m[1]] {
				t.Errorf("%s names the test %s, which no _test.go file defines: rename it there, or name the test that now proves it", f, m[1])
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d test names found in the docs", checked)
	}
}
