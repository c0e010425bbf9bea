package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
)

// testKey writes a new ECDSA P-256 key pair as PEM files (the private one
// unencrypted, mode 0600) and returns their paths.
func testKey(t *testing.T) (private, public string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	private, public = filepath.Join(dir, "signing.key"), filepath.Join(dir, "signing.pub")
	if err := os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	pub, err := publicKeyPEM(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(public, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	return private, public
}

// debianRootTar writes a tar that looks like a root of rootfs.sh to
// provenance: its package sources and its dpkg status.
func debianRootTar(t *testing.T) string {
	t.Helper()
	return writeTar(t, "root.tar", 0o644, map[string]string{
		"./etc/apt/sources.list": "deb http://snapshot.debian.org/archive/debian/20260101T000000Z bookworm main\n",
		"./var/lib/dpkg/status":  "Package: jq\nStatus: install ok installed\nVersion: 1.6-2.1\nArchitecture: amd64\nDescription: x\n more\n\nPackage: bash\nVersion: 5.2.15-2+b7\nArchitecture: amd64\n",
	})
}

// writeFile writes content to a new file and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// signedLayout builds the two tags of buildLayout and signs v1.2.3 with
// key, with a provenance and an SBOM per platform.
func signedLayout(t *testing.T, key, repository string) string {
	t.Helper()
	dir := buildLayout(t)
	predicate, err := makeProvenance([]string{"-tag", "v1.2.3", "-source", "git+https://github.com/hook-operator/hook-operator",
		"-commit", strings.Repeat("ab", 20), "-command", "make release VERSION=v1.2.3", "-builder", "https://example.com/builder",
		"-go", "go1.26.8 linux amd64", "-sum", "go.sum=" + writeFile(t, "go.sum", "example.com/m v1.0.0 h1:x=\n"),
		"-root", "linux/amd64=" + debianRootTar(t)})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-layout", dir, "-tag", "v1.2.3", "-key", key, "-repository", repository,
		"-provenance", writeFile(t, "provenance.json", string(predicate))}
	for _, arch := range []string{"amd64", "arm64"} {
		args = append(args, "-sbom", "linux/"+arch+"="+writeFile(t, arch+".cdx.json", `{"bomFormat":"CycloneDX","specVersion":"1.6","metadata":{"component":{"name":"`+arch+`"}}}`))
	}
	if err := sign(args); err != nil {
		t.Fatalf("sign %v: %v", args, err)
	}
	return dir
}

// tamperingRegistry is an in-process registry that, once told a blob's
// digest, serves other bytes for it: a registry (or a mirror, or a proxy)
// that swaps a layer.
type tamperingRegistry struct {
	*httptest.Server
	mu     sync.Mutex
	digest string
}

func newTamperingRegistry(t *testing.T) *tamperingRegistry {
	r := &tamperingRegistry{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		d := r.digest
		r.mu.Unlock()
		if d != "" && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/blobs/"+d) {
			// A well-formed gzip tar, of other content.
			zw := gzip.NewWriter(w)
			tw := tar.NewWriter(zw)
			_ = tw.WriteHeader(&tar.Header{Name: "bin/x", Mode: 0o755, Size: 5, Typeflag: tar.TypeReg})
			_, _ = tw.Write([]byte("evil\n"))
			_ = tw.Close()
			_ = zw.Close()
			return
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// tamper makes the registry serve other bytes for blob d.
func (r *tamperingRegistry) tamper(d v1.Hash) {
	r.mu.Lock()
	r.digest = d.String()
	r.mu.Unlock()
}

// The release's signatures and attestations, written into the layout by
// sign and pushed with the image, verify against the registry with the
// public key; and verification fails when anything was changed after
// signing: a layer the registry serves, the image the tag names, a
// signature, an attestation's statement, or the key.
func TestSignPushVerify(t *testing.T) {
	key, pub := testKey(t)
	reg := newTamperingRegistry(t)
	repo := strings.TrimPrefix(reg.URL, "http://") + "/ops/hook-operator"
	dir := signedLayout(t, key, repo)
	for _, tag := range []string{"v1.2.3", "v1.2.3-python"} {
		if err := push([]string{"-layout", dir, "-tag", tag, "-to", repo}); err != nil {
			t.Fatal(err)
		}
	}
	pubKey, err := loadPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	ref := func(tag string) source {
		r, err := name.NewTag(repo+":"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		return registrySource(r)
	}
	required := []string{slsaProvenanceV1, cycloneDX}
	report, err := verifyImage(ref("v1.2.3"), pubKey, required)
	if err != nil {
		t.Fatalf("the signed image does not verify: %v", err)
	}
	if len(report) != 3 {
		t.Errorf("verified %d manifests, want the index and its 2 images:\n%s", len(report), strings.Join(report, "\n"))
	}
	t.Logf("verified:\n%s", strings.Join(report, "\n"))
	if _, err := verifyImage(layoutSource(dir, "v1.2.3"), pubKey, required); err != nil {
		t.Errorf("the layout does not verify: %v", err)
	}
	if err := verify([]string{"-key", pub, "-image", repo + ":v1.2.3", "-insecure", "-require", cycloneDX}); err != nil {
		t.Errorf("ociimage verify: %v", err)
	}
	if _, err := verifyImage(ref("v1.2.3-python"), pubKey, required); err == nil || !strings.Contains(err.Error(), ".sig") {
		t.Errorf("an unsigned tag: %v, want an error naming the missing .sig", err)
	}

	// The provenance says what was built from what.
	st := attestedStatement(t, ref("v1.2.3"), pubKey, slsaProvenanceV1)
	var p slsaProvenance
	if err := json.Unmarshal(st.Predicate, &p); err != nil {
		t.Fatal(err)
	}
	deps, _ := json.Marshal(p.BuildDefinition.ResolvedDependencies)
	for _, want := range []string{`"gitCommit":"abab`, "go1.26.8", `"name":"go.sum"`, "snapshot.debian.org", "pkg:deb/debian/bash@5.2.15-2+b7?arch=amd64", "pkg:deb/debian/jq@1.6-2.1?arch=amd64"} {
		if !strings.Contains(string(deps), want) {
			t.Errorf("the provenance's resolvedDependencies lack %q:\n%s", want, deps)
		}
	}
	if p.RunDetails.Builder.ID != "https://example.com/builder" || p.BuildDefinition.ExternalParameters["command"] != "make release VERSION=v1.2.3" {
		t.Errorf("the provenance's builder %q and parameters %v", p.RunDetails.Builder.ID, p.BuildDefinition.ExternalParameters)
	}

	t.Run("wrong key", func(t *testing.T) {
		_, other := testKey(t)
		otherKey, _ := loadPublicKey(other)
		if _, err := verifyImage(ref("v1.2.3"), otherKey, required); err == nil {
			t.Error("verified with another key")
		}
	})
	t.Run("a signature copied to another image", func(t *testing.T) {
		// Another build of the tag (a layer changed), given the signed
		// index's signature: it names the signed digest, not this one.
		other := filepath.Join(t.TempDir(), "oci")
		config := writeFile(t, "config.json", `{"User":"65532:65532"}`)
		if err := build([]string{"-layout", other, "-tag", "v1.2.3", "-config", config,
			"linux/amd64=" + layerTar(t, "bin/x", "a layer that was never signed")}); err != nil {
			t.Fatal(err)
		}
		if err := push([]string{"-layout", other, "-tag", "v1.2.3", "-to", repo + "-copy"}); err != nil {
			t.Fatal(err)
		}
		signed, _ := taggedIndex(dir, "v1.2.3")
		forged, _ := taggedIndex(other, "v1.2.3")
		sd, _ := signed.Digest()
		fd, _ := forged.Digest()
		if sd == fd {
			t.Fatal("two builds of different layers have one digest")
		}
		for _, suffix := range []string{"sig", "att"} {
			img, err := layoutSource(dir, "v1.2.3").artifact(tagFor(sd, suffix))
			if err != nil {
				t.Fatal(err)
			}
			copyTag, _ := name.NewTag(repo+"-copy:"+tagFor(fd, suffix), name.Insecure)
			if err := remote.Write(copyTag, img); err != nil {
				t.Fatal(err)
			}
		}
		r, _ := name.NewTag(repo+"-copy:v1.2.3", name.Insecure)
		if _, err := verifyImage(registrySource(r), pubKey, required); err == nil || !strings.Contains(err.Error(), "not this manifest") {
			t.Errorf("another image with the signed one's signature: %v, want it refused", err)
		}
	})
	t.Run("a statement changed", func(t *testing.T) {
		r, _ := name.NewTag(repo+":v1.2.3", name.Insecure)
		idx, _ := remote.Index(r)
		d, _ := idx.Digest()
		attTag := r.Context().Tag(tagFor(d, "att"))
		att, err := remote.Image(attTag)
		if err != nil {
			t.Fatal(err)
		}
		layers, _ := att.Layers()
		m, _ := att.Manifest()
		rc, _ := layers[0].Uncompressed()
		var env envelope
		if err := json.NewDecoder(rc).Decode(&env); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		payload, _ := base64.StdEncoding.DecodeString(env.Payload)
		env.Payload = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(payload), "https://example.com/builder", "https://example.com/someone-else", 1)))
		changed, _ := json.Marshal(env)
		tampered, err := artifactImage(mutate.Addendum{Layer: static.NewLayer(changed, dsseType), Annotations: m.Layers[0].Annotations})
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(attTag, tampered); err != nil {
			t.Fatal(err)
		}
		if _, err := verifyImage(ref("v1.2.3"), pubKey, required); err == nil || !strings.Contains(err.Error(), "does not verify") {
			t.Errorf("a changed statement: %v, want its signature refused", err)
		}
		if err := remote.Write(attTag, att); err != nil {
			t.Fatal(err)
		}
		if _, err := verifyImage(ref("v1.2.3"), pubKey, required); err != nil {
			t.Fatalf("the original attestation, written back: %v", err)
		}
	})
	// Last: the registry keeps serving the tampered blob.
	t.Run("a layer tampered", func(t *testing.T) {
		idx, err := taggedIndex(dir, "v1.2.3")
		if err != nil {
			t.Fatal(err)
		}
		m, _ := idx.IndexManifest()
		img, _ := idx.Image(m.Manifests[1].Digest)
		layers, _ := img.Layers()
		d, _ := layers[1].Digest()
		reg.tamper(d)
		if _, err := verifyImage(ref("v1.2.3"), pubKey, required); err == nil || !strings.Contains(err.Error(), "content: ") {
			t.Errorf("an image whose layer %s the registry changed: %v, want its content refused", d, err)
		} else {
			t.Logf("refused, as it must be: %v", err)
		}
	})
}

// attestedStatement returns the verified statement of predicate type pt
// about the index of src.
func attestedStatement(t *testing.T, src source, pub *ecdsa.PublicKey, pt string) statement {
	t.Helper()
	idx, err := src.index()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	payloads, _, err := artifactLayers(src, d, "att")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		st, err := openEnvelope(pub, p)
		if err != nil {
			t.Fatal(err)
		}
		if st.PredicateType == pt {
			return st
		}
	}
	t.Fatalf("no attestation of type %s", pt)
	return statement{}
}

// DSSE's pre-authentication encoding, as its specification's example has it.
func TestPAE(t *testing.T) {
	got := string(pae("http://example.com/HelloWorld", []byte("hello world")))
	if want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"; got != want {
		t.Errorf("pae = %q, want %q", got, want)
	}
}

// A blob's signature (the chart's) verifies, and not once the blob changed.
func TestSignBlob(t *testing.T) {
	key, pub := testKey(t)
	chart := writeFile(t, "hook-operator-1.2.3.tgz", "a chart")
	if err := signBlob([]string{"-key", key, chart}); err != nil {
		t.Fatal(err)
	}
	if err := verifyBlob([]string{"-key", pub, chart}); err != nil {
		t.Errorf("the signed chart: %v", err)
	}
	if err := os.WriteFile(chart, []byte("a chart, changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verifyBlob([]string{"-key", pub, chart}); err == nil {
		t.Error("a changed chart verified")
	}
}

// Keys: a key of another curve is refused, an encrypted one needs its
// password, and no error shows the password.
func TestLoadKey(t *testing.T) {
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(p384)
	other := writeFile(t, "p384.key", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
	if _, err := loadKey(other); err == nil || !strings.Contains(err.Error(), "P-256") {
		t.Errorf("a P-384 key: %v, want it refused naming P-256", err)
	}
	sealed := writeFile(t, "cosign.key", "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\neyJrZGYiOnt9fQ==\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
	t.Setenv(passwordEnv, "")
	os.Unsetenv(passwordEnv)
	if _, err := loadKey(sealed); err == nil || !strings.Contains(err.Error(), passwordEnv) {
		t.Errorf("an encrypted key without a password: %v, want an error naming %s", err, passwordEnv)
	}
	t.Setenv(passwordEnv, "s3cret-test-password")
	if _, err := loadKey(sealed); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a broken encrypted key: %v, want an error without the password", err)
	}
}
