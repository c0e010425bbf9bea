package main

import (
	"crypto/ecdsa"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
)

// sign signs the index tagged -tag in a layout and each of its images, and
// attests the provenance and the SBOMs, in cosign's formats (cosign.go):
// it adds the .sig and .att images to the layout, tagged as cosign looks
// for them, so that push puts them where `cosign verify` finds them.
//
// The index's .att holds the provenance and every platform's SBOM; each
// image's .att the provenance and its platform's SBOM. The provenance's
// subjects are the index and its images; an SBOM's the index and its
// platform's image.
func sign(args []string) error {
	fs := flag.NewFlagSet("ociimage sign", flag.ContinueOnError)
	dir := fs.String("layout", "", "the OCI image layout holding the image")
	tag := fs.String("tag", "", "the image's tag in the layout")
	keyPath := fs.String("key", "", "the signing key: cosign.key (password in "+passwordEnv+") or a PEM EC P-256 key")
	repository := fs.String("repository", "", "the repository the image is pushed to (the signatures' identity)")
	provenancePath := fs.String("provenance", "", "the SLSA v1 provenance predicate (ociimage provenance)")
	var sboms multiFlag
	fs.Var(&sboms, "sbom", "a CycloneDX SBOM of one platform's image, as OS/ARCH=FILE (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *tag == "" || *keyPath == "" || *repository == "" || *provenancePath == "" || fs.NArg() != 0 {
		return errors.New("usage: ociimage sign -layout DIR -tag TAG -key KEY -repository REPOSITORY -provenance FILE [-sbom OS/ARCH=FILE]...")
	}
	key, err := loadKey(*keyPath)
	if err != nil {
		return err
	}
	idx, err := taggedIndex(*dir, *tag)
	if err != nil {
		return err
	}
	atts, err := attestations(key, idx, *repository, *provenancePath, sboms)
	if err != nil {
		return fmt.Errorf("%s: %w", *tag, err)
	}
	path, err := layout.FromPath(*dir)
	if err != nil {
		return err
	}
	// In the order of the digests, so that index.json is the same for
	// every signing of one build.
	for _, d := range slices.SortedFunc(maps.Keys(atts), func(a, b v1.Hash) int { return strings.Compare(a.String(), b.String()) }) {
		if err := writeSigned(path, key, *repository, d, atts[d]); err != nil {
			return fmt.Errorf("layout %s: %w", *dir, err)
		}
	}
	indexDigest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s signed, with %d attestations\n", *tag, indexDigest, len(atts[indexDigest]))
	return nil
}

// attestations signs the statements about idx and its images, by the
// digest they are attached to: the provenance (its subjects: the index and
// every image) on each; each platform's SBOM (its subjects: the index and
// that platform's image) on that image and on the index.
func attestations(key *ecdsa.PrivateKey, idx v1.ImageIndex, repository, provenancePath string, sboms []string) (map[v1.Hash][]attestation, error) {
	indexDigest, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	about := func(d v1.Hash) subject {
		return subject{Name: repository, Digest: map[string]string{d.Algorithm: d.Hex}}
	}
	images := map[string]v1.Hash{}
	subjects := []subject{about(indexDigest)}
	for _, m := range manifest.Manifests {
		if m.Platform == nil {
			return nil, fmt.Errorf("image %s has no platform", m.Digest)
		}
		images[m.Platform.OS+"/"+m.Platform.Architecture] = m.Digest
		subjects = append(subjects, about(m.Digest))
	}
	predicate, err := os.ReadFile(provenancePath)
	if err != nil {
		return nil, err
	}
	prov, err := attest(key, slsaProvenanceV1, predicate, subjects)
	if err != nil {
		return nil, err
	}
	atts := map[v1.Hash][]attestation{indexDigest: {prov}}
	for _, d := range images {
		atts[d] = []attestation{prov}
	}
	for _, s := range sboms {
		platform, file, ok := strings.Cut(s, "=")
		d, known := images[platform]
		if !ok || !known {
			return nil, fmt.Errorf("-sbom %q: give OS/ARCH=FILE for one of its platforms (%v)", s, keysOf(images))
		}
		bom, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		a, err := attest(key, cycloneDX, bom, []subject{about(indexDigest), about(d)})
		if err != nil {
			return nil, fmt.Errorf("-sbom %s: %w", platform, err)
		}
		atts[indexDigest] = append(atts[indexDigest], a)
		atts[d] = append(atts[d], a)
	}
	return atts, nil
}

// writeSigned adds to the layout the signature of the manifest of digest
// d (its .sig) and its attestations (its .att), replacing earlier ones.
func writeSigned(path layout.Path, key *ecdsa.PrivateKey, repository string, d v1.Hash, atts []attestation) error {
	payload, err := simpleSigningPayload(repository, d)
	if err != nil {
		return err
	}
	sig, err := signBytes(key, payload)
	if err != nil {
		return err
	}
	sigImg, err := signatureImage(payload, sig)
	if err != nil {
		return err
	}
	attImg, err := attestationImage(atts)
	if err != nil {
		return err
	}
	for _, a := range []struct {
		suffix string
		img    v1.Image
	}{{"sig", sigImg}, {"att", attImg}} {
		img, t := a.img, tagFor(d, a.suffix)
		if err := path.ReplaceImage(img, match.Annotation(refName, t), layout.WithAnnotations(map[string]string{refName: t})); err != nil {
			return err
		}
	}
	return nil
}

// keysOf returns the keys of m.
func keysOf[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// signBlob writes FILE.sig for each file, as `cosign sign-blob
// --output-signature FILE.sig` does, and prints its path.
func signBlob(args []string) error {
	fs := flag.NewFlagSet("ociimage sign-blob", flag.ContinueOnError)
	keyPath := fs.String("key", "", "the signing key, as for sign")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keyPath == "" || fs.NArg() == 0 {
		return errors.New("usage: ociimage sign-blob -key KEY FILE...")
	}
	key, err := loadKey(*keyPath)
	if err != nil {
		return err
	}
	for _, file := range fs.Args() {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		sig, err := signBytes(key, data)
		if err != nil {
			return err
		}
		if err := os.WriteFile(file+".sig", []byte(sig), 0o644); err != nil {
			return err
		}
		fmt.Println(file + ".sig")
	}
	return nil
}

// publicKey prints the PEM public key of a signing key (cosign.pub).
func publicKey(args []string) error {
	fs := flag.NewFlagSet("ociimage public-key", flag.ContinueOnError)
	keyPath := fs.String("key", "", "the signing key, as for sign")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keyPath == "" || fs.NArg() != 0 {
		return errors.New("usage: ociimage public-key -key KEY")
	}
	key, err := loadKey(*keyPath)
	if err != nil {
		return err
	}
	pub, err := publicKeyPEM(&key.PublicKey)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(pub)
	return err
}
