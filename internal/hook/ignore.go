package hook

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// IgnoreFile is the name of the file, at the top of the hooks folder, whose
// lines name entries that are not hooks (a node_modules folder, helper
// binaries), in gitignore syntax.
const IgnoreFile = ".hookignore"

// ignoreRule is one pattern line of a .hookignore file.
type ignoreRule struct {
	line    int
	text    string // the line as written, for the reason shown to users
	glob    string // the pattern, without "!", leading or trailing "/"
	negate  bool   // "!pattern": the entry is a hook again
	dirOnly bool   // "pattern/": only folders match
	// anchored patterns (a "/" at the start or in the middle) match from
	// the top of the hooks folder; the others match at any depth.
	anchored bool
}

// ignoreRules are the rules of one .hookignore file, in file order: as in
// gitignore, the last rule that matches an entry decides.
type ignoreRules []ignoreRule

// readIgnore reads the folder's .hookignore, a regular file of at most
// MaxIgnoreFileBytes (see folder.readFile). A missing file is no rules.
func readIgnore(f folder) (ignoreRules, error) {
	b, err := f.readFile(IgnoreFile, MaxIgnoreFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseIgnore(b)
}

// parseIgnore parses gitignore syntax: blank lines and lines starting with
// "#" are skipped; "!" negates; a trailing "/" matches only folders; a "/"
// at the start or in the middle anchors the pattern at the top of the
// hooks folder; "*", "?" and "[...]" match within one path element and "**"
// across elements. A pattern that cannot be matched is an error naming its
// line.
func parseIgnore(b []byte) (ignoreRules, error) {
	var rules ignoreRules
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, MaxIgnoreFileBytes+1) // a line as long as the file may be
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimRight(sc.Text(), " \t\r")
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		r := ignoreRule{line: n, text: text, glob: text}
		if strings.HasPrefix(r.glob, `\#`) || strings.HasPrefix(r.glob, `\!`) {
			r.glob = r.glob[1:]
		} else if strings.HasPrefix(r.glob, "!") {
			r.negate, r.glob = true, r.glob[1:]
		}
		if strings.HasSuffix(r.glob, "/") {
			r.dirOnly, r.glob = true, strings.TrimRight(r.glob, "/")
		}
		if strings.Contains(r.glob, "/") {
			r.anchored, r.glob = true, strings.TrimPrefix(r.glob, "/")
		}
		if r.glob == "" {
			return nil, fmt.Errorf("%s line %d: %q matches nothing; write a name or a pattern such as node_modules/", IgnoreFile, n, text)
		}
		for _, el := range strings.Split(r.glob, "/") {
			if _, err := path.Match(el, ""); err != nil {
				return nil, fmt.Errorf("%s line %d: %q: %v; escape a literal [ or \\ with a backslash", IgnoreFile, n, text, err)
			}
		}
		rules = append(rules, r)
	}
	return rules, sc.Err()
}

// match reports whether the entry rel (relative to the hooks folder, with
// forward slashes) is ignored, and the rule that decided it. A negated
// rule that matches last makes the entry not ignored.
func (rs ignoreRules) match(rel string, dir bool) (ignored bool, rule ignoreRule) {
	for _, r := range rs {
		if r.dirOnly && !dir {
			continue
		}
		if r.matches(rel) {
			ignored, rule = !r.negate, r
		}
	}
	return ignored, rule
}

func (r ignoreRule) matches(rel string) bool {
	target := strings.Split(rel, "/")
	pattern := strings.Split(r.glob, "/")
	if r.anchored {
		return matchElements(pattern, target)
	}
	// An unanchored pattern has one element and matches the entry's name.
	return matchElements(pattern, target[len(target)-1:])
}

// matchElements matches path elements against pattern elements, where a
// "**" element matches zero or more elements.
func matchElements(pattern, target []string) bool {
	if len(pattern) == 0 {
		return len(target) == 0
	}
	if pattern[0] == "**" {
		for i := 0; i <= len(target); i++ {
			if matchElements(pattern[1:], target[i:]) {
				return true
			}
		}
		return false
	}
	if len(target) == 0 {
		return false
	}
	ok, _ := path.Match(pattern[0], target[0])
	return ok && matchElements(pattern[1:], target[1:])
}
