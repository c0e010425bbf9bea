package deploy_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// debianLock is hack/release/debian.lock, as debian-lock.sh writes it.
type debianLock struct {
	suites   map[string]time.Time // "ARCHIVE SUITE" → its InRelease Date
	archives map[string]bool
	epoch    int64
	include  map[string]string // variant → rootfs.sh's package list
	debs     []lockedDeb
}

// lockedDeb is one "deb" line of the lock.
type lockedDeb struct {
	line                                 int
	arch, variant, pkg, version, debArch string
	archive, filename, sha256            string
	size                                 int64
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// readDebianLock parses the lock, failing t with the line and what to do
// on a line it cannot read.
func readDebianLock(t *testing.T, path string) debianLock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v: run make debian-lock", err)
	}
	defer f.Close()
	l := debianLock{suites: map[string]time.Time{}, archives: map[string]bool{}, include: map[string]string{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, " ")
		bad := func(why string) {
			t.Fatalf("%s:%d: %s: %q (the lock is debian-lock.sh's: run make debian-lock rather than edit it)", path, n, why, line)
		}
		switch fields[0] {
		case "suite":
			if len(fields) != 4 {
				bad("a suite line is: suite ARCHIVE SUITE DATE")
			}
			when, err := time.Parse(time.RFC3339, fields[3])
			if err != nil {
				bad(err.Error())
			}
			l.suites[fields[1]+" "+fields[2]] = when
			l.archives[fields[1]] = true
		case "epoch":
			if len(fields) != 2 {
				bad("an epoch line is: epoch SECONDS")
			}
			if l.epoch, err = strconv.ParseInt(fields[1], 10, 64); err != nil {
				bad(err.Error())
			}
		case "include":
			if len(fields) != 3 {
				bad("an include line is: include VARIANT PKG,PKG,...")
			}
			l.include[fields[1]] = fields[2]
		case "deb":
			if len(fields) != 10 {
				bad("a deb line is: deb ARCH VARIANT PACKAGE VERSION DEBARCH ARCHIVE FILENAME SIZE SHA256")
			}
			d := lockedDeb{line: n, arch: fields[1], variant: fields[2], pkg: fields[3], version: fields[4],
				debArch: fields[5], archive: fields[6], filename: fields[7], sha256: fields[9]}
			if d.size, err = strconv.ParseInt(fields[8], 10, 64); err != nil || d.size <= 0 {
				bad("SIZE is not a positive number")
			}
			l.debs = append(l.debs, d)
		default:
			bad("unknown line")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return l
}

// hack/release/debian.lock pins every package of every release root: each
// architecture and variant that release.sh builds has its packages, each
// named once, with a pool path of its version and architecture in an
// archive of the lock's suites and a SHA-256; rootfs.sh's package lists
// are the ones the lock was resolved from, the python root holds the base
// root's packages, and the epoch the roots' times are clamped to is the
// newest suite's date. A lock edited by hand, or one left behind by a
// change of rootfs.sh's lists, fails here.
func TestReleaseDebianLock(t *testing.T) {
	root := repoRoot(t)
	path := filepath.Join(root, "hack", "release", "debian.lock")
	l := readDebianLock(t, path)
	fail := func(d lockedDeb, format string, args ...any) {
		t.Errorf("%s:%d: %s %s (%s %s): %s; run make debian-lock", path, d.line, d.pkg, d.version, d.arch, d.variant, fmt.Sprintf(format, args...))
	}

	if len(l.suites) == 0 {
		t.Fatalf("%s names no suite: run make debian-lock", path)
	}
	var newest time.Time
	for _, when := range l.suites {
		if when.After(newest) {
			newest = when
		}
	}
	if l.epoch != newest.Unix() {
		t.Errorf("%s: epoch %d, but its newest suite is of %s (%d): run make debian-lock", path, l.epoch, newest.Format(time.RFC3339), newest.Unix())
	}

	names := map[string]map[string]bool{} // "arch variant" → packages
	for _, d := range l.debs {
		key := d.arch + " " + d.variant
		if names[key] == nil {
			names[key] = map[string]bool{}
		}
		if names[key][d.pkg] {
			fail(d, "pinned twice for %s", key)
		}
		names[key][d.pkg] = true
		if d.debArch != d.arch && d.debArch != "all" {
			fail(d, "its architecture %s is neither %s nor all", d.debArch, d.arch)
		}
		if !l.archives[d.archive] {
			fail(d, "its archive %s is none of the lock's suites'", d.archive)
		}
		version := d.version
		if _, after, ok := strings.Cut(version, ":"); ok {
			version = after // the epoch is not in the file's name
		}
		if !strings.HasPrefix(d.filename, "pool/") || !strings.HasSuffix(d.filename, "/"+d.pkg+"_"+version+"_"+d.debArch+".deb") {
			fail(d, "its pool path %s is not that of %s_%s_%s.deb", d.filename, d.pkg, version, d.debArch)
		}
		if !sha256Hex.MatchString(d.sha256) {
			fail(d, "SHA256 %q is not 64 hex digits", d.sha256)
		}
	}

	for _, variant := range []string{"base", "python"} {
		want := strings.TrimSpace(string(run(t, root, nil, "hack/release/rootfs.sh", "--packages", variant)))
		if l.include[variant] != want {
			t.Errorf("%s: the %s root was resolved from %q, and rootfs.sh now names %q: run make debian-lock and commit the lock", path, variant, l.include[variant], want)
		}
		for _, arch := range []string{"amd64", "arm64"} {
			have := names[arch+" "+variant]
			if len(have) == 0 {
				t.Errorf("%s pins no package for %s %s: run make debian-lock", path, arch, variant)
				continue
			}
			for _, pkg := range strings.Split(want, ",") {
				if !have[pkg] {
					t.Errorf("%s: %s, which rootfs.sh names, is not pinned for %s %s: run make debian-lock", path, pkg, arch, variant)
				}
			}
			if variant == "python" {
				for pkg := range names[arch+" base"] {
					if !have[pkg] {
						t.Errorf("%s: %s is pinned in the base root of %s but not in its python root: run make debian-lock", path, pkg, arch)
					}
				}
			}
		}
	}
	if keys := len(names); keys != 4 {
		var got []string
		for k := range names {
			got = append(got, k)
		}
		slices.Sort(got)
		t.Errorf("%s pins packages for %v, want amd64 and arm64, base and python", path, got)
	}
}
