package testcluster

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"TestFoo":                         "TestFoo",
		"TestFoo/sub case#1":              "TestFoo_sub_case_1",
		"/leading":                        "leading",
		"Test" + string(rune(0xe9)) + "x": "Test__x",
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	long := sanitize("TestVeryLongNameThatGoesOnAndOnAndOnBeyondTheLimitOfSixtyThreeCharactersXYZ")
	if len(long) > 63 {
		t.Errorf("sanitize kept %d characters, label values allow 63", len(long))
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "hack", "cluster", "up.sh")); err != nil {
		t.Fatalf("RepoRoot() = %q, which holds no hack/cluster/up.sh: %v", root, err)
	}
	wd, _ := os.Getwd()
	if filepath.Join(root, "internal", "testcluster") != wd {
		t.Fatalf("RepoRoot() = %q, want the folder two levels above %q", root, wd)
	}
}
