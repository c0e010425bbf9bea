package deploy_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// releaseSigningEnv writes a new signing key into dir and returns the
// environment that has release.sh sign the release the tests build with
// it (sign.sh), as a maintainer's HOOK_OPERATOR_SIGNING_KEY would.
func releaseSigningEnv(dir string) ([]string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "signing.key")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	return []string{"HOOK_OPERATOR_SIGNING_KEY=" + path}, nil
}

// dirAndVersion keeps the folder and version of release's results,
// whatever else it returns.
func dirAndVersion(dir, version string, _ ...[]string) (string, string) { return dir, version }

// provenanceOf reads the SLSA provenance predicate of the image tag of the
// release in dir.
func provenanceOf(t *testing.T, dir, tag string) (p struct {
	BuildDefinition struct {
		BuildType            string
		ExternalParameters   map[string]any
		ResolvedDependencies []struct {
			Name, URI   string
			Digest      map[string]string
			Annotations map[string]any
		}
	}
	RunDetails struct {
		Builder struct{ ID string }
	}
}) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "hook-operator-"+tag+".provenance.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("%s provenance: %v", tag, err)
	}
	return p
}

// Each image's SLSA provenance (what sign.sh attests) names what it was
// built from: this commit, the Go toolchain, the module sums (go.sum's
// digest is this checkout's), and for each architecture the Debian root
// with its package sources and the packages the image must have.
func TestReleaseProvenance(t *testing.T) {
	dir, version := dirAndVersion(release(t))
	commit := strings.TrimSpace(string(run(t, repoRoot(t), nil, "git", "rev-parse", "HEAD")))
	goVersion := strings.TrimSpace(string(run(t, repoRoot(t), nil, "go", "env", "GOVERSION")))
	sum, err := os.ReadFile(filepath.Join(repoRoot(t), "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	goSum := sha256.Sum256(sum)
	for _, tag := range []string{version, version + "-python"} {
		p := provenanceOf(t, dir, tag)
		def := p.BuildDefinition
		if p.RunDetails.Builder.ID == "" || def.BuildType == "" || def.ExternalParameters["tag"] != tag {
			t.Errorf("%s: builder %q, buildType %q, parameters %v: want all set, for this tag", tag, p.RunDetails.Builder.ID, def.BuildType, def.ExternalParameters)
		}
		found := map[string]bool{}
		packages := map[string]bool{}
		for _, d := range def.ResolvedDependencies {
			switch {
			case d.Name == "source" && d.Digest["gitCommit"] == commit:
				found["source"] = true
			case d.Name == "go toolchain" && strings.HasPrefix(d.Annotations["version"].(string), goVersion+" "):
				found["go"] = true
			case d.Name == "go.sum" && d.Digest["sha256"] == hex.EncodeToString(goSum[:]):
				found["go.sum"] = true
			case strings.HasPrefix(d.Name, "debian root "):
				sources, _ := d.Annotations["sources"].([]any)
				if len(sources) == 0 || d.Digest["sha256"] == "" {
					t.Errorf("%s: %s without its package sources or digest: %v", tag, d.Name, d.Annotations)
				}
				found["debian"] = true
			case strings.HasPrefix(d.URI, "pkg:deb/debian/"):
				pkg, _, _ := strings.Cut(strings.TrimPrefix(d.URI, "pkg:deb/debian/"), "@")
				packages[pkg] = true
			}
		}
		for _, want := range []string{"source", "go", "go.sum", "debian"} {
			if !found[want] {
				t.Errorf("%s: the provenance's resolvedDependencies lack %s (commit %s, %s, go.sum sha256 %x)", tag, want, commit, goVersion, goSum)
			}
		}
		want := []string{"bash", "jq", "tini", "ca-certificates"}
		if strings.HasSuffix(tag, "-python") {
			want = append(want, "python3")
		}
		for _, pkg := range want {
			if !packages[pkg] {
				t.Errorf("%s: the provenance lists no Debian package %s among %d", tag, pkg, len(packages))
			}
		}
	}
}

// ociimageBinary builds hack/release/ociimage, as release.sh does.
func ociimageBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ociimage")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(repoRoot(t), "hack", "release", "ociimage")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build hack/release/ociimage: %v\n%s", err, out)
	}
	return bin
}

// The release is signed (the tests' own with a key of theirs, make
// release-check's with HOOK_OPERATOR_SIGNING_KEY's): each image index and
// image of both tags has a signature and the provenance and SBOM
// attestations that verify with cosign.pub, and the chart's signature
// verifies; another key verifies neither, nor does a changed chart.
// (hack/release/ociimage's tests push a signed layout to an in-process
// registry and check that tampering is refused; make release-check has
// cosign itself verify the release.)
func TestReleaseSignatures(t *testing.T) {
	dir, version := dirAndVersion(release(t))
	pub := filepath.Join(dir, "cosign.pub")
	if _, err := os.Stat(pub); err != nil {
		if os.Getenv("HOOK_OPERATOR_RELEASE_DIR") != "" {
			t.Skipf("%s is unsigned (make release ran without HOOK_OPERATOR_SIGNING_KEY); the release workflow signs keyless once it pushed", dir)
		}
		t.Fatalf("the tests' release, built with a signing key, has no cosign.pub: %v", err)
	}
	ociimage := ociimageBinary(t)
	for _, tag := range []string{version, version + "-python"} {
		// The layers' bytes are TestReleaseSumsAndSBOMs's (SHA256SUMS);
		// ociimage's own tests check that verify refuses a changed one.
		args := []string{"verify", "-key", pub, "-layout", filepath.Join(dir, "oci"), "-tag", tag, "-layers=false", "-require", "https://slsa.dev/provenance/v1"}
		if sboms, _ := filepath.Glob(filepath.Join(dir, "hook-operator-"+tag+"-*.cdx.json")); len(sboms) > 0 {
			args = append(args, "-require", "https://cyclonedx.org/bom")
		}
		out := string(run(t, dir, nil, ociimage, args...))
		if n := strings.Count(out, "signature verified"); n < 2 {
			t.Errorf("%s: %d manifests verified, want the index and its images:\n%s", tag, n, out)
		}
		t.Logf("%s:\n%s", tag, out)
	}
	charts, _ := filepath.Glob(filepath.Join(dir, "hook-operator-*.tgz"))
	if len(charts) != 1 {
		t.Fatalf("charts %v, want one", charts)
	}
	run(t, dir, nil, ociimage, "verify-blob", "-key", pub, charts[0])

	other := t.TempDir()
	env, err := releaseSigningEnv(other)
	if err != nil {
		t.Fatal(err)
	}
	otherPub := filepath.Join(other, "other.pub")
	pubPEM := run(t, dir, nil, ociimage, "public-key", "-key", strings.TrimPrefix(env[0], "HOOK_OPERATOR_SIGNING_KEY="))
	if err := os.WriteFile(otherPub, pubPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(other, filepath.Base(charts[0]))
	if err := os.WriteFile(changed, []byte("another chart"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"verify", "-key", otherPub, "-layout", filepath.Join(dir, "oci"), "-tag", version},
		{"verify-blob", "-key", otherPub, charts[0]},
		{"verify-blob", "-key", pub, "-signature", charts[0] + ".sig", changed},
	} {
		if out, err := exec.Command(ociimage, args...).CombinedOutput(); err == nil {
			t.Errorf("ociimage %s verified:\n%s", strings.Join(args, " "), out)
		}
	}
	if !slices.Contains(listed(t, dir), "cosign.pub") {
		t.Error("cosign.pub is not in SHA256SUMS")
	}
}

// listed returns the files SHA256SUMS of the release in dir lists.
func listed(t *testing.T, dir string) []string {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		if _, file, ok := strings.Cut(line, "  "); ok {
			files = append(files, file)
		}
	}
	return files
}
