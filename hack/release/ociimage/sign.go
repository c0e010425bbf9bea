package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
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
	indexDigest, err := idx.Digest()
	if err != nil {
		return err
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	images := map[string]v1.Hash{}
	subjects := []subject{{Name: *repository, Digest: map[string]string{indexDigest.Algorithm: indexDigest.Hex}}}
	for _, m := range manifest.Manifests {
		if m.Platform == nil {
			return fmt.Errorf("%s: image %s has no platform", *tag, m.Digest)
		}
		images[m.Platform.OS+"/"+m.Platform.Architecture] = m.Digest
		subjects = append(subjects, subject{Name: *repository, Digest: map[string]string{m.Digest.Algorithm: m.Digest.Hex}})
	}

	predicate, err := os.ReadFile(*provenancePath)
	if err != nil {
		return err
	}
	prov, err := attest(key, slsaProvenanceV1, predicate, subjects)
	if err != nil {
		return err
	}
	atts := map[v1.Hash][]attestation{indexDigest: {prov}}
	for _, d := range images {
		atts[d] = []attestation{prov}
	}
	for _, s := range sboms {
		platform, file, ok := strings.Cut(s, "=")
		d, known := images[platform]
		if !ok || !known {
			return fmt.Errorf("-sbom %q: give OS/ARCH=FILE for a platform of %s (%v)", s, *tag, keysOf(images))
		}
		bom, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		a, err := attest(key, cycloneDX, bom, []subject{subjects[0], {Name: *repository, Digest: map[string]string{d.Algorithm: d.Hex}}})
		if err != nil {
			return fmt.Errorf("-sbom %s: %w", platform, err)
		}
		atts[indexDigest] = append(atts[indexDigest], a)
		atts[d] = append(atts[d], a)
	}

	path, err := layout.FromPath(*dir)
	if err != nil {
		return err
	}
	for d, a := range atts {
		payload, err := simpleSigningPayload(*repository, d)
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
		attImg, err := attestationImage(a)
		if err != nil {
			return err
		}
		for suffix, img := range map[string]v1.Image{"sig": sigImg, "att": attImg} {
			t := tagFor(d, suffix)
			if err := path.ReplaceImage(img, match.Annotation(refName, t), layout.WithAnnotations(map[string]string{refName: t})); err != nil {
				return fmt.Errorf("layout %s: %w", *dir, err)
			}
		}
	}
	fmt.Printf("%s@%s signed, with %d attestations\n", *tag, indexDigest, len(atts[indexDigest]))
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
