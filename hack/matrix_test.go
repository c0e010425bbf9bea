package hack_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/kube"
)

// The version matrix's default list, the oldest release start accepts
// without a warning, and what README, the Makefile and compatibility.md say
// agree: the list runs from kube.OldestTested to the pinned release, and each
// release in it has its wrapper module (or is the pinned one).
func TestMatrixDefaultsAgree(t *testing.T) {
	root, _ := trackedFiles(t)
	read := func(name string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	m := regexp.MustCompile(`(?m)^default_versions="([^"]+)"`).FindStringSubmatch(read("hack/test-matrix.sh"))
	if m == nil {
		t.Fatal(`hack/test-matrix.sh sets no default_versions="..."`)
	}
	versions := strings.Fields(m[1])
	pinned := regexp.MustCompile(`(?m)^KUBE_VERSION=(\S+)`).FindStringSubmatch(read("hack/cluster/versions.env"))
	if pinned == nil {
		t.Fatal("hack/cluster/versions.env sets no KUBE_VERSION")
	}
	if len(versions) < 4 || versions[len(versions)-1] != pinned[1] {
		t.Errorf("the matrix's default list %v: want at least four releases, ending with the pinned %s", versions, pinned[1])
	}
	oldest := fmt.Sprintf("v%d.%d.", kube.OldestTested.Major, kube.OldestTested.Minor)
	if len(versions) > 0 && !strings.HasPrefix(versions[0], oldest) {
		t.Errorf("the matrix's oldest release %s is not kube.OldestTested (%s): start would warn about a release that is tested, or not warn about one that is not", versions[0], kube.OldestTested)
	}
	for _, v := range versions {
		if v == pinned[1] {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, "hack/cluster/matrix", v, "go.mod")); err != nil {
			t.Errorf("release %s of the matrix has no wrapper module: run hack/cluster/kube-module.sh %s", v, v)
		}
	}
	list := strings.Join(versions[:len(versions)-1], ", ") + " and " + versions[len(versions)-1]
	rangeText := fmt.Sprintf("Kubernetes %d.%d to 1.", kube.OldestTested.Major, kube.OldestTested.Minor)
	for file, want := range map[string][]string{
		"Makefile":              {"(default " + m[1] + ")"},
		"README.md":             {list, rangeText},
		"docs/compatibility.md": {rangeText},
		"docs/development.md":   {`KUBE_VERSIONS="` + m[1]},
	} {
		text := read(file)
		flat := strings.Join(strings.Fields(text), " ")
		for _, w := range want {
			if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
				t.Errorf("%s does not say %q", file, w)
			}
		}
	}
}
