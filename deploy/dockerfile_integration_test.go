package deploy_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// dockerfileImage is the tag the tests build the top-level Dockerfile as.
const dockerfileImage = "hook-operator-dockerfile:test"

var dockerfileBuilt imageBuild

// builtDockerfile builds the top-level Dockerfile with
// hack/image/dockerfile.sh (the engine engine.sh names, podman with this
// machine's settings and the base image bases.sh provides), as VERSION
// version and COMMIT commit, once per test binary, and returns the engine.
func builtDockerfile(t *testing.T, version, commit string) engine {
	t.Helper()
	return dockerfileBuilt.get(t, "dockerfile.sh", []string{"IMAGE_VERSION=" + version, "IMAGE_COMMIT=" + commit}, dockerfileImage)
}

// fsEntry is what the tests compare of one path of an image's file system:
// its type, mode bits (set-user-ID and the like too), owner, link target,
// and a regular file's size and SHA-256. A hard link is compared as the
// file it links to. Times are not compared: the release stamps the
// commit's, a builder its own.
type fsEntry struct {
	Type     byte
	Mode     int64
	UID, GID int
	Link     string
	Size     int64
	SHA256   string
}

func (e fsEntry) String() string {
	s := fmt.Sprintf("type %q mode %04o owner %d:%d", e.Type, e.Mode, e.UID, e.GID)
	if e.Link != "" {
		s += " -> " + e.Link
	}
	if e.Type == tar.TypeReg {
		s += fmt.Sprintf(" %d bytes sha256 %.12s", e.Size, e.SHA256)
	}
	return s
}

// imageFS is an image's file system, its layers applied in order.
type imageFS struct {
	entries map[string]fsEntry // "/usr/bin/curl" -> its entry
	status  []byte             // /var/lib/dpkg/status
}

// apply applies one layer (a tar, gzip or not), whiteouts included.
func (fs *imageFS) apply(r io.Reader) error {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		r = zr
	} else {
		r = br
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name)
		if name == "/" {
			continue
		}
		dir, base := path.Split(name)
		if strings.HasPrefix(base, ".wh.") {
			gone := path.Join(dir, strings.TrimPrefix(base, ".wh."))
			if base == ".wh..wh..opq" {
				gone = path.Clean(dir)
			}
			for p := range fs.entries {
				if (p == gone && base != ".wh..wh..opq") || strings.HasPrefix(p, gone+"/") {
					delete(fs.entries, p)
				}
			}
			continue
		}
		e := fsEntry{Type: h.Typeflag, Mode: h.Mode & 0o7777, UID: h.Uid, GID: h.Gid}
		switch h.Typeflag {
		case tar.TypeReg:
			sum := sha256.New()
			var keep bytes.Buffer
			w := io.Writer(sum)
			if name == "/var/lib/dpkg/status" {
				w = io.MultiWriter(sum, &keep)
			}
			n, err := io.Copy(w, tr)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			e.Size, e.SHA256 = n, hex.EncodeToString(sum.Sum(nil))
			if keep.Len() > 0 {
				fs.status = keep.Bytes()
			}
		case tar.TypeLink:
			target, ok := fs.entries[path.Clean("/"+h.Linkname)]
			if !ok {
				return fmt.Errorf("%s: a hard link to %s, which comes later or not at all", name, h.Linkname)
			}
			e.Type, e.Size, e.SHA256 = tar.TypeReg, target.Size, target.SHA256
		case tar.TypeSymlink:
			e.Link = h.Linkname
		}
		fs.entries[name] = e
	}
}

// releaseImageFS returns the file system and configuration of the
// release's linux/GOARCH image tagged tag in the OCI layout oci.
func releaseImageFS(t *testing.T, oci, tag string) (*imageFS, imageConfig) {
	t.Helper()
	m, ok := platformManifests(t, oci, tag)["linux/"+runtime.GOARCH]
	if !ok {
		t.Fatalf("%s: no linux/%s image", tag, runtime.GOARCH)
	}
	var cf imageConfig
	if err := json.Unmarshal(blob(t, oci, m.Config.Digest), &cf); err != nil {
		t.Fatal(err)
	}
	fs := &imageFS{entries: map[string]fsEntry{}}
	for _, l := range m.Layers {
		if err := fs.apply(bytes.NewReader(blob(t, oci, l.Digest))); err != nil {
			t.Fatalf("%s: layer %s: %v", tag, l.Digest, err)
		}
	}
	return fs, cf
}

// savedImageFS returns the file system and configuration of image, saved
// by the engine in docker save's format (podman's and docker's default):
// manifest.json naming the configuration and the layers' tars.
func savedImageFS(t *testing.T, e engine, image string) (*imageFS, imageConfig) {
	t.Helper()
	dir := t.TempDir()
	archive := filepath.Join(dir, "image.tar")
	e.must(t, "save", "-o", archive, image)
	if out, err := exec.Command("tar", "-xf", archive, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar -xf %s: %v\n%s", archive, err, out)
	}
	must(t, os.Remove(archive))
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	must(t, err)
	var manifests []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(data, &manifests); err != nil || len(manifests) != 1 {
		t.Fatalf("%s saved: manifest.json: %v (%d images)", image, err, len(manifests))
	}
	var cf imageConfig
	data, err = os.ReadFile(filepath.Join(dir, manifests[0].Config))
	must(t, err)
	must(t, json.Unmarshal(data, &cf))
	fs := &imageFS{entries: map[string]fsEntry{}}
	for _, l := range manifests[0].Layers {
		f, err := os.Open(filepath.Join(dir, l))
		must(t, err)
		err = fs.apply(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s saved: layer %s: %v", image, l, err)
		}
	}
	return fs, cf
}

// dpkgVersions returns "package version" of each package a dpkg status
// file lists, sorted.
func dpkgVersions(status []byte) []string {
	var out []string
	for _, para := range strings.Split(string(status), "\n\n") {
		var pkg, version string
		for _, line := range strings.Split(para, "\n") {
			if v, ok := strings.CutPrefix(line, "Package: "); ok {
				pkg = v
			} else if v, ok := strings.CutPrefix(line, "Version: "); ok {
				version = v
			}
		}
		if pkg != "" {
			out = append(out, pkg+" "+version)
		}
	}
	slices.Sort(out)
	return out
}

// The top-level Dockerfile, built as `podman build .` (or docker) builds
// it, gives the release's image of this machine's architecture, as the
// tests' release builds it for the same version and commit: every path
// with the same type, mode, owner, link target and content (binaries
// byte for byte: the same scripts build them with the same flags), the
// same Debian packages at the same versions (dpkg's status), and the same
// settings (user, entrypoint, command, variables, folder, port, labels).
// What a builder stamps and the release does not (times, history) is not
// compared.
func TestIntegrationDockerfileImage(t *testing.T) {
	dir, version, _ := release(t)
	if given() {
		t.Skip("compares the Dockerfile with a release built here for this tree, not a given one")
	}
	release, rcf := releaseImageFS(t, filepath.Join(dir, "oci"), version)
	// The commit the release stamped, should HEAD have moved since.
	e := builtDockerfile(t, version, rcf.Config.Labels["org.opencontainers.image.revision"])
	t.Logf("hack/image/dockerfile.sh built the Dockerfile in %s", dockerfileBuilt.took.Round(time.Second))
	start := time.Now()
	built, dcf := savedImageFS(t, e, dockerfileImage)
	t.Logf("saved and read in %s", time.Since(start).Round(time.Second))

	var diffs []string
	for _, p := range slices.Sorted(maps.Keys(release.entries)) {
		r := release.entries[p]
		d, ok := built.entries[p]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: only in the release's image (%v)", p, r))
		case d != r:
			diffs = append(diffs, fmt.Sprintf("%s: release %v; Dockerfile %v", p, r, d))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(built.entries)) {
		if _, ok := release.entries[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: only in the Dockerfile's image (%v)", p, built.entries[p]))
		}
	}
	if len(diffs) > 0 {
		t.Errorf("the Dockerfile's image and the release's differ at %d of %d paths (both build the tree as it is: was a source changed between the two builds?):\n%s",
			len(diffs), len(release.entries), strings.Join(diffs[:min(len(diffs), 30)], "\n"))
	}
	if len(release.entries) < 1000 {
		t.Errorf("the release's image has %d paths; want a Debian root and the image's files", len(release.entries))
	}
	t.Logf("%d paths compared", len(release.entries))

	rp, dp := dpkgVersions(release.status), dpkgVersions(built.status)
	if len(rp) == 0 || !slices.Equal(rp, dp) {
		t.Errorf("Debian packages (dpkg status):\nrelease:    %v\nDockerfile: %v", rp, dp)
	}
	for _, want := range []string{"bash", "curl", "jq", "tini"} {
		if !slices.ContainsFunc(rp, func(p string) bool { return strings.HasPrefix(p, want+" ") }) {
			t.Errorf("dpkg status lists no %s: %v", want, rp)
		}
	}

	if rcf.OS != dcf.OS || rcf.Architecture != dcf.Architecture {
		t.Errorf("platform: release %s/%s, Dockerfile %s/%s", rcf.OS, rcf.Architecture, dcf.OS, dcf.Architecture)
	}
	r, d := rcf.Config, dcf.Config
	for _, c := range []struct {
		what      string
		rel, dock any
	}{
		{"User", r.User, d.User},
		{"Entrypoint", r.Entrypoint, d.Entrypoint},
		{"Cmd", r.Cmd, d.Cmd},
		{"Env", r.Env, d.Env},
		{"WorkingDir", r.WorkingDir, d.WorkingDir},
		{"ExposedPorts", slices.Sorted(maps.Keys(r.ExposedPorts)), slices.Sorted(maps.Keys(d.ExposedPorts))},
		{"Labels", r.Labels, d.Labels},
	} {
		if fmt.Sprint(c.rel) != fmt.Sprint(c.dock) {
			t.Errorf("%s: release %q, Dockerfile %q", c.what, c.rel, c.dock)
		}
	}
}
