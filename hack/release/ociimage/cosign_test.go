package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
)

// cosignRelease is what TestCosignVerifies checks: a layout, its tags, the
// public key, a signed chart, and whether SBOMs are attested.
type cosignRelease struct {
	layout, pub, chart string
	key                string // cosign.key, for a release signed here
	tags               []string
	sboms              bool
}

// cosignSubject returns the release make release-check points at
// (HOOK_OPERATOR_RELEASE_DIR) if it is signed, or else a small one signed
// here with a key of `cosign generate-key-pair` (encrypted, with a password
// of the test's).
func cosignSubject(t *testing.T, cosign, repository string) cosignRelease {
	t.Helper()
	if dir := os.Getenv("HOOK_OPERATOR_RELEASE_DIR"); dir != "" {
		version := os.Getenv("HOOK_OPERATOR_RELEASE_VERSION")
		r := cosignRelease{layout: filepath.Join(dir, "oci"), pub: filepath.Join(dir, "cosign.pub"), tags: []string{version, version + "-python"}}
		if _, err := os.Stat(r.pub); err == nil {
			charts, _ := filepath.Glob(filepath.Join(dir, "hook-operator-*.tgz"))
			if len(charts) != 1 {
				t.Fatalf("%s: charts %v, want one", dir, charts)
			}
			r.chart = charts[0]
			sboms, _ := filepath.Glob(filepath.Join(dir, "hook-operator-"+version+"-*.cdx.json"))
			r.sboms = len(sboms) > 0
			return r
		}
		// The workflow's release is signed keyless once pushed: cosign
		// checks the formats on a small layout instead.
		t.Logf("%s is not signed (no cosign.pub: make release ran without HOOK_OPERATOR_SIGNING_KEY): checking a small layout signed here", dir)
	}
	keys := t.TempDir()
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	t.Setenv(passwordEnv, hex.EncodeToString(secret))
	cmd := exec.Command(cosign, "generate-key-pair")
	cmd.Dir = keys
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	r := cosignRelease{layout: signedLayout(t, filepath.Join(keys, "cosign.key"), repository), pub: filepath.Join(keys, "cosign.pub"), key: filepath.Join(keys, "cosign.key"), tags: []string{"v1.2.3"}, sboms: true}
	r.chart = writeFile(t, "hook-operator-1.2.3.tgz", "a chart")
	if err := signBlob([]string{"-key", filepath.Join(keys, "cosign.key"), r.chart}); err != nil {
		t.Fatal(err)
	}
	return r
}

// The cosign CLI (HOOK_OPERATOR_COSIGN; make release-check builds the pinned
// one) verifies what sign wrote as a user does (docs/releases.md): the
// signature of each tag's index and of each of its images, their SLSA
// provenance and CycloneDX SBOM attestations, pushed to an in-process
// registry; and the chart's signature. It refuses an image whose layer was
// changed, a changed statement, and a changed chart. The other way round,
// what cosign signs and attests in that format verifies with ociimage.
// Only make release-check runs it (cosign is a 20-minute build on 2 cores);
// make test leaves it out by name, and without cosign it fails.
func TestCosignVerifies(t *testing.T) {
	cosign := os.Getenv("HOOK_OPERATOR_COSIGN")
	if cosign == "" {
		t.Fatal("HOOK_OPERATOR_COSIGN is not set: run this with make release-check, which builds the pinned cosign (hack/tools/cosign.sh); make test leaves it out (-skip '^TestCosign')")
	}
	reg := newTamperingRegistry(t)
	repo := strings.TrimPrefix(reg.URL, "http://") + "/hook-operator"
	r := cosignSubject(t, cosign, repo)
	for _, tag := range r.tags {
		if err := push([]string{"-layout", r.layout, "-tag", tag, "-to", repo}); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(cosign, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Signed with a key, in no transparency log: --insecure-ignore-tlog.
	withKey := []string{"--key", r.pub, "--insecure-ignore-tlog=true", "--allow-http-registry"}
	mustVerify := func(args ...string) {
		t.Helper()
		if out, err := run(append(append([]string{args[0]}, withKey...), args[1:]...)...); err != nil {
			t.Errorf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("cosign %s: verified", strings.Join(args, " "))
		}
	}
	types := []string{"slsaprovenance1"}
	if r.sboms {
		types = append(types, "cyclonedx")
	}
	for _, tag := range r.tags {
		idx, err := taggedIndex(r.layout, tag)
		if err != nil {
			t.Fatal(err)
		}
		digests, err := manifestDigests(idx)
		if err != nil {
			t.Fatal(err)
		}
		refs := []string{repo + ":" + tag}
		for _, d := range digests[1:] {
			refs = append(refs, repo+"@"+d.String())
		}
		for _, ref := range refs {
			mustVerify("verify", ref)
			for _, typ := range types {
				mustVerify("verify-attestation", "--type", typ, ref)
			}
		}
	}
	blob := []string{"verify-blob", "--key", r.pub, "--insecure-ignore-tlog=true", "--signature", r.chart + ".sig", r.chart}
	if out, err := run(blob...); err != nil {
		t.Errorf("cosign verify-blob: %v\n%s", err, out)
	}

	tag := r.tags[0]
	t.Run("cosign's own signatures", func(t *testing.T) {
		// What cosign writes in the tag-based format (the release workflow
		// signs keyless so) verifies with ociimage verify: the formats are one.
		if r.key == "" {
			t.Skip("the release's private key is not here")
		}
		image := repo + "-cosign:" + tag
		if err := push([]string{"-layout", buildLayout(t), "-tag", tag, "-to", repo + "-cosign"}); err != nil {
			t.Fatal(err)
		}
		legacy := []string{"--yes", "--new-bundle-format=false", "--use-signing-config=false", "--tlog-upload=false", "--allow-http-registry", "--key", r.key}
		predicate := writeFile(t, "provenance.json", `{"buildDefinition":{"buildType":"https://example.com/t","externalParameters":{}},"runDetails":{"builder":{"id":"https://example.com/b"}}}`)
		for _, args := range [][]string{
			append(append([]string{"sign"}, legacy...), "--recursive", image),
			append(append([]string{"attest"}, legacy...), "--type", "slsaprovenance1", "--predicate", predicate, image),
		} {
			if out, err := run(args...); err != nil {
				t.Fatalf("cosign %s: %v\n%s", args[0], err, out)
			}
		}
		ref, _ := name.NewTag(image, name.Insecure)
		pub, err := loadPublicKey(r.pub)
		if err != nil {
			t.Fatal(err)
		}
		idx, _ := remote.Index(ref)
		d, _ := idx.Digest()
		src := registrySource(ref)
		if err := verifySignatures(src, pub, d); err != nil {
			t.Errorf("cosign's signature: %v", err)
		}
		if types, err := verifyAttestations(src, pub, d); err != nil || len(types) != 1 || types[0] != slsaProvenanceV1 {
			t.Errorf("cosign's attestation: %v %v, want one of %s", types, err, slsaProvenanceV1)
		}
	})
	t.Run("a statement changed", func(t *testing.T) {
		idx, _ := taggedIndex(r.layout, tag)
		d, _ := idx.Digest()
		attTag, _ := name.NewTag(repo+":"+tagFor(d, "att"), name.Insecure)
		att, err := remote.Image(attTag)
		if err != nil {
			t.Fatal(err)
		}
		layers, _ := att.Layers()
		m, _ := att.Manifest()
		var adds []mutate.Addendum
		for i, l := range layers {
			rc, _ := l.Compressed()
			var env envelope
			if err := json.NewDecoder(rc).Decode(&env); err != nil {
				t.Fatal(err)
			}
			rc.Close()
			payload, _ := base64.StdEncoding.DecodeString(env.Payload)
			env.Payload = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"builder":{"id":"`, `"builder":{"id":"https://example.com/someone-else#`, 1)))
			changed, _ := json.Marshal(env)
			adds = append(adds, mutate.Addendum{Layer: static.NewLayer(changed, dsseType), Annotations: m.Layers[i].Annotations})
		}
		tampered, err := artifactImage(adds...)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(attTag, tampered); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := remote.Write(attTag, att); err != nil {
				t.Fatal(err)
			}
		}()
		out, err := run(append(append([]string{"verify-attestation"}, withKey...), "--type", "slsaprovenance1", repo+":"+tag)...)
		if err == nil {
			t.Errorf("cosign verify-attestation accepted a changed statement:\n%s", out)
		} else {
			t.Logf("refused, as it must be: %s", lastLine(out))
		}
	})
	t.Run("a layer changed", func(t *testing.T) {
		// The tag moved to a build with another layer: no signature names it.
		other := filepath.Join(t.TempDir(), "oci")
		config := writeFile(t, "config.json", `{"User":"65532:65532"}`)
		if err := build([]string{"-layout", other, "-tag", tag, "-config", config,
			"linux/amd64=" + layerTar(t, "bin/x", "a layer that was never signed")}); err != nil {
			t.Fatal(err)
		}
		if err := push([]string{"-layout", other, "-tag", tag, "-to", repo}); err != nil {
			t.Fatal(err)
		}
		out, err := run(append(append([]string{"verify"}, withKey...), repo+":"+tag)...)
		if err == nil {
			t.Errorf("cosign verify accepted an image with a changed layer:\n%s", out)
		} else {
			t.Logf("refused, as it must be: %s", lastLine(out))
		}
	})
	t.Run("the chart changed", func(t *testing.T) {
		changed := writeFile(t, filepath.Base(r.chart), "another chart")
		out, err := run("verify-blob", "--key", r.pub, "--insecure-ignore-tlog=true", "--signature", r.chart+".sig", changed)
		if err == nil {
			t.Errorf("cosign verify-blob accepted a changed chart:\n%s", out)
		} else {
			t.Logf("refused, as it must be: %s", lastLine(out))
		}
	})
}

// lastLine is the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
