package deploy_test

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dockerignore is a .dockerignore: patterns, later ones winning, "!"
// re-including.
type dockerignore []string

func readDockerignore(t *testing.T) dockerignore {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var d dockerignore
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			d = append(d, l)
		}
	}
	return d
}

// excludes reports whether p (a slash-separated path in the context) is
// left out: the last pattern matching p or a folder above it decides.
func (d dockerignore) excludes(p string) bool {
	excluded := false
	for _, pat := range d {
		neg := strings.HasPrefix(pat, "!")
		re := ignorePattern(strings.TrimSuffix(strings.TrimPrefix(pat, "!"), "/"))
		for q := p; q != "." && q != "/" && q != ""; q = path.Dir(q) {
			if re.MatchString(q) {
				excluded = !neg
				break
			}
		}
	}
	return excluded
}

// ignorePattern turns a .dockerignore pattern into a regexp: * and ?
// within one path element, ** across elements.
func ignorePattern(pat string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pat); i++ {
		switch {
		case strings.HasPrefix(pat[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(pat[i:], "**"):
			b.WriteString(".*")
			i++
		case pat[i] == '*':
			b.WriteString("[^/]*")
		case pat[i] == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(pat[i : i+1]))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func TestDockerignore(t *testing.T) {
	d := dockerignore{"*", "!go.mod", "!hooks/", "hooks/memcached/memcached", "**/testdata"}
	for p, want := range map[string]bool{
		"go.mod": false, "go.sum": true, "bin/hook-operator": true,
		"hooks/hello/greet-configmaps.sh": false, "hooks/memcached/memcached": true,
		"hooks/memcached/main.go": false, "hooks/x/testdata/a.yaml": true, "testdata": true,
	} {
		if got := d.excludes(p); got != want {
			t.Errorf("excludes(%q) = %v, want %v", p, got, want)
		}
	}
}
