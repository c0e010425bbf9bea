package deploy_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// releaseVersion is the version the tests build a release as.
const releaseVersion = "v0.0.0-test"

var (
	releaseOnce sync.Once
	releaseDir  string
	releaseErr  string
)

// releaseArches are the architectures of a release, as make release builds it.
var releaseArches = []string{"amd64", "arm64"}

// given reports whether the release the tests check is one given by
// HOOK_OPERATOR_RELEASE_DIR (make release-check), a whole one.
func given() bool { return os.Getenv("HOOK_OPERATOR_RELEASE_DIR") != "" }

// release returns the folder of a release built by hack/release/release.sh,
// and the architectures it holds: HOOK_OPERATOR_RELEASE_DIR when set (make
// release-check points it at the dist/ it has just written, with its
// VERSION in HOOK_OPERATOR_RELEASE_VERSION), a whole release; else one
// built here once per test binary, of this machine's architecture alone and
// without SBOMs (RELEASE_ARCHES, RELEASE_SBOMS=0): the other architecture's
// kubectl and syft would be the slowest builds of make test on a new
// machine, and make release-check checks them (docs/development.md). About
// a minute on a machine whose cache has kubectl and the Debian roots, a few
// more the first time.
func release(t *testing.T) (dir, version string, arches []string) {
	t.Helper()
	if given() {
		version := os.Getenv("HOOK_OPERATOR_RELEASE_VERSION")
		if version == "" {
			t.Fatal("HOOK_OPERATOR_RELEASE_DIR is set without HOOK_OPERATOR_RELEASE_VERSION: set both, as make release-check does")
		}
		return os.Getenv("HOOK_OPERATOR_RELEASE_DIR"), version, releaseArches
	}
	if !slices.Contains(releaseArches, runtime.GOARCH) {
		t.Skipf("make release builds for %v; this machine is %s: run make release-check on one of those", releaseArches, runtime.GOARCH)
	}
	releaseOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hook-operator-release-")
		if err != nil {
			releaseErr = err.Error()
			return
		}
		releaseDir = filepath.Join(dir, "dist")
		script := filepath.Join(repoRoot(t), "hack", "release", "release.sh")
		signing, err := releaseSigningEnv(dir)
		if err != nil {
			releaseErr = err.Error()
			return
		}
		cmd := exec.Command(script, releaseVersion, releaseDir)
		cmd.Env = append(os.Environ(), append(signing, "RELEASE_ARCHES="+runtime.GOARCH, "RELEASE_SBOMS=0")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			releaseErr = script + ": " + err.Error() + "\n" + string(out)
		}
	})
	if releaseErr != "" {
		t.Fatal(releaseErr)
	}
	return releaseDir, releaseVersion, []string{runtime.GOARCH}
}

// ociDescriptor is the part of an OCI descriptor the tests read.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

// blob reads the blob of digest d in the OCI layout dir.
func blob(t *testing.T, dir, d string) []byte {
	t.Helper()
	algo, hex, _ := strings.Cut(d, ":")
	data, err := os.ReadFile(filepath.Join(dir, "blobs", algo, hex))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// ociManifest is the part of an image manifest the tests read, with its
// own digest.
type ociManifest struct {
	Digest string          `json:"-"`
	Config ociDescriptor   `json:"config"`
	Layers []ociDescriptor `json:"layers"`
}

// platformManifests returns the manifest of each platform's image
// ("linux/arm64" -> manifest) of the index tagged tag in layout dir.
func platformManifests(t *testing.T, dir, tag string) map[string]ociManifest {
	t.Helper()
	var top struct{ Manifests []ociDescriptor }
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	var index *ociDescriptor
	for i, m := range top.Manifests {
		if m.Annotations["org.opencontainers.image.ref.name"] == tag {
			index = &top.Manifests[i]
		}
	}
	if index == nil {
		t.Fatalf("%s/index.json: no index tagged %s", dir, tag)
	}
	var idx struct{ Manifests []ociDescriptor }
	if err := json.Unmarshal(blob(t, dir, index.Digest), &idx); err != nil {
		t.Fatal(err)
	}
	platforms := map[string]ociManifest{}
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			t.Fatalf("%s: manifest %s without a platform", tag, m.Digest)
		}
		manifest := ociManifest{Digest: m.Digest}
		if err := json.Unmarshal(blob(t, dir, m.Digest), &manifest); err != nil {
			t.Fatal(err)
		}
		platforms[m.Platform.OS+"/"+m.Platform.Architecture] = manifest
	}
	return platforms
}

// elfMachine returns the machine of an ELF file's header, or ok false when
// head (the file's first bytes) is not an ELF header.
func elfMachine(head []byte) (machine elf.Machine, ok bool) {
	if len(head) < 20 || !bytes.HasPrefix(head, []byte(elf.ELFMAG)) {
		return 0, false
	}
	var order binary.ByteOrder = binary.LittleEndian
	if elf.Data(head[elf.EI_DATA]) == elf.ELFDATA2MSB {
		order = binary.BigEndian
	}
	// e_machine follows e_ident (16 bytes) and e_type (2 bytes) in both classes.
	return elf.Machine(order.Uint16(head[18:20])), true
}

// executables returns the machine of every executable ELF file in the gzip
// tar layers ("/usr/bin/bash" -> machine), and the executable files that
// are neither ELF files nor scripts (#!).
func executables(t *testing.T, dir string, layers []ociDescriptor) (elfs map[string]elf.Machine, other []string) {
	t.Helper()
	elfs = map[string]elf.Machine{}
	for _, l := range layers {
		err := eachLayerEntry(t, dir, l.Digest, func(h *tar.Header, r io.Reader) error {
			if h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
				return nil
			}
			head := make([]byte, 64)
			n, _ := io.ReadFull(r, head)
			name := "/" + strings.TrimPrefix(h.Name, "./")
			if m, ok := elfMachine(head[:n]); ok {
				elfs[name] = m
			} else if !bytes.HasPrefix(head[:n], []byte("#!")) {
				other = append(other, name)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return elfs, other
}

// eachLayerEntry calls fn with each entry of the gzip tar layer digest of
// the OCI layout dir, its content readable from r, and stops at the first
// error, which it returns naming the layer.
func eachLayerEntry(t *testing.T, dir, digest string, fn func(h *tar.Header, r io.Reader) error) error {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, dir, digest)))
	if err != nil {
		return fmt.Errorf("layer %s: %w", digest, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err == nil {
			err = fn(h, tr)
		}
		if err != nil {
			return fmt.Errorf("layer %s: %w", digest, err)
		}
	}
}

// Every executable ELF file of each architecture's image, of both variants,
// is built for that architecture: the operator, kubectl, the Go hooks and
// Debian's programs alike (shell-operator's users once got an arm64 image
// of amd64 binaries). make test checks its release of this machine's
// architecture; make release-check both architectures of dist/.
func TestReleaseImagesArchitecture(t *testing.T) {
	dir, version, arches := release(t)
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	want := map[string]elf.Machine{}
	for _, arch := range arches {
		want["linux/"+arch] = machines[arch]
	}
	for _, tag := range []string{version, version + "-python"} {
		platforms := platformManifests(t, filepath.Join(dir, "oci"), tag)
		if len(platforms) != len(want) {
			t.Errorf("%s: platforms %v, want %v", tag, keys(platforms), keys(want))
		}
		for platform, manifest := range platforms {
			machine, known := want[platform]
			if !known {
				t.Errorf("%s: platform %s, want %v only", tag, platform, keys(want))
				continue
			}
			elfs, _ := executables(t, filepath.Join(dir, "oci"), manifest.Layers)
			for name, m := range elfs {
				if m != machine {
					t.Errorf("%s %s: %s is built for %v, want %v", tag, platform, name, m, machine)
				}
			}
			must := []string{"/usr/local/bin/hook-operator", "/usr/local/bin/kubectl", "/bin/bash", "/usr/bin/jq", "/usr/bin/curl", "/usr/bin/tini", "/examples/hooks/memcached/memcached"}
			if strings.HasSuffix(tag, "-python") {
				must = append(must, "/usr/bin/python3.11")
			}
			for _, name := range must {
				if _, ok := elfs[name]; !ok {
					t.Errorf("%s %s: no executable %s among the %d ELF files", tag, platform, name, len(elfs))
				}
			}
		}
	}
}

// Every file of the release is in SHA256SUMS with its digest, and the
// SBOMs (CycloneDX) describe what they are of: the binary's Go modules,
// each image's Debian packages and the operator in it. make test's release
// has no SBOMs (syft is a long build on a new machine, needed only to
// release): there it checks the sums and that no SBOM was written; make
// release-check checks dist/'s SBOMs.
func TestReleaseSumsAndSBOMs(t *testing.T) {
	dir, version, arches := release(t)
	run(t, dir, nil, "sha256sum", "--quiet", "--strict", "-c", "SHA256SUMS")
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		if _, file, ok := strings.Cut(line, "  "); ok {
			listed[file] = true
		}
	}
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel != "SHA256SUMS" && !listed[rel] {
			t.Errorf("%s is not in SHA256SUMS", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !given() {
		if sboms, _ := filepath.Glob(filepath.Join(dir, "*.cdx.json")); len(sboms) != 0 {
			t.Errorf("RELEASE_SBOMS=0 wrote SBOMs: %v", sboms)
		}
		t.Log("no SBOMs in make test's release (RELEASE_SBOMS=0): make release-check checks them")
		return
	}

	// components returns the names of the components of a CycloneDX SBOM.
	components := func(file string) map[string]bool {
		var bom struct {
			BOMFormat  string `json:"bomFormat"`
			Components []struct{ Name, Type string }
		}
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &bom); err != nil || bom.BOMFormat != "CycloneDX" {
			t.Fatalf("%s: not a CycloneDX JSON SBOM (%v)", file, err)
		}
		names := map[string]bool{}
		for _, c := range bom.Components {
			names[c.Name] = true
		}
		return names
	}
	for _, arch := range arches {
		if c := components("hook-operator-linux-" + arch + ".cdx.json"); !c["k8s.io/client-go"] {
			t.Errorf("hook-operator-linux-%s.cdx.json does not list k8s.io/client-go among %d components", arch, len(c))
		}
		for _, tag := range []string{version, version + "-python"} {
			file := "hook-operator-" + tag + "-" + arch + ".cdx.json"
			c := components(file)
			want := []string{"bash", "jq", "curl", "tini", "k8s.io/client-go"}
			if strings.HasSuffix(tag, "-python") {
				want = append(want, "python3")
			}
			for _, name := range want {
				if !c[name] {
					t.Errorf("%s does not list %s among %d components", file, name, len(c))
				}
			}
		}
	}
}
