package main

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// source is where verify reads an image and its signatures from: an OCI
// layout or a registry.
type source struct {
	index    func() (v1.ImageIndex, error)
	artifact func(tag string) (v1.Image, error)
}

// layoutSource reads the index tagged tag of the layout dir.
func layoutSource(dir, tag string) source {
	return source{
		index: func() (v1.ImageIndex, error) { return taggedIndex(dir, tag) },
		artifact: func(t string) (v1.Image, error) {
			top, m, err := layoutTop(dir)
			if err != nil {
				return nil, err
			}
			for _, d := range m.Manifests {
				if d.Annotations[refName] == t {
					return top.Image(d.Digest)
				}
			}
			return nil, fmt.Errorf("layout %s: no %s", dir, t)
		},
	}
}

// registrySource reads the image ref (REPOSITORY:TAG) from its registry.
func registrySource(ref name.Reference, opts ...remote.Option) source {
	opts = append(opts, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	return source{
		index: func() (v1.ImageIndex, error) { return remote.Index(ref, opts...) },
		artifact: func(t string) (v1.Image, error) {
			return remote.Image(ref.Context().Tag(t), opts...)
		},
	}
}

// verifyImage checks an index and each of its images with pub: the
// content (every manifest, configuration and layer has its digest), a
// valid signature (.sig) naming each manifest's digest, and valid
// attestations (.att) about it, of at least the predicate types required.
// Any signature or attestation that does not verify is an error, not only
// a missing one. It returns a line per manifest for the log. With opts
// validate.Fast, the layers' bytes are not read (their digests checked
// elsewhere, as SHA256SUMS does for dist/).
func verifyImage(src source, pub *ecdsa.PublicKey, required []string, opts ...validate.Option) ([]string, error) {
	idx, err := src.index()
	if err != nil {
		return nil, err
	}
	if err := validate.Index(idx, opts...); err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	digests, err := manifestDigests(idx)
	if err != nil {
		return nil, err
	}
	var report []string
	for _, d := range digests {
		if err := verifySignatures(src, pub, d); err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		types, err := verifyAttestations(src, pub, d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		for _, want := range required {
			if !slices.Contains(types, want) {
				return nil, fmt.Errorf("%s: no attestation of type %s (it has %v)", d, want, types)
			}
		}
		report = append(report, fmt.Sprintf("%s: signature verified; attestations verified: %s", d, strings.Join(types, ", ")))
	}
	return report, nil
}

// artifactLayers returns the payload and annotations of each layer of the
// .sig or .att image of digest d.
func artifactLayers(src source, d v1.Hash, suffix string) ([][]byte, []map[string]string, error) {
	img, err := src.artifact(tagFor(d, suffix))
	if err != nil {
		return nil, nil, fmt.Errorf("no %s: %w", tagFor(d, suffix), err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, nil, err
	}
	var payloads [][]byte
	var annotations []map[string]string
	for i, l := range layers {
		// Read as stored (these layers are not compressed), and checked
		// against the manifest's digest whatever the source.
		rc, err := l.Compressed()
		if err != nil {
			return nil, nil, err
		}
		data, err := io.ReadAll(io.LimitReader(rc, 64<<20))
		rc.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: layer %d: %w", tagFor(d, suffix), i, err)
		}
		if sum := sha256.Sum256(data); m.Layers[i].Digest.Hex != hex.EncodeToString(sum[:]) {
			return nil, nil, fmt.Errorf("%s: layer %d does not have its digest %s", tagFor(d, suffix), i, m.Layers[i].Digest)
		}
		payloads = append(payloads, data)
		annotations = append(annotations, m.Layers[i].Annotations)
	}
	if len(payloads) == 0 {
		return nil, nil, fmt.Errorf("%s holds no layer", tagFor(d, suffix))
	}
	return payloads, annotations, nil
}

// verifySignatures checks every signature of the manifest of digest d.
func verifySignatures(src source, pub *ecdsa.PublicKey, d v1.Hash) error {
	payloads, annotations, err := artifactLayers(src, d, "sig")
	if err != nil {
		return err
	}
	for i, payload := range payloads {
		if err := verifyBytes(pub, payload, annotations[i][signatureAnnotation]); err != nil {
			return fmt.Errorf("signature %d: %w", i, err)
		}
		var p simpleSigning
		if err := json.Unmarshal(payload, &p); err != nil {
			return fmt.Errorf("signature %d: payload: %w", i, err)
		}
		if p.Critical.Type != simpleSigningClaim || p.Critical.Image.DockerManifestDigest != d.String() {
			return fmt.Errorf("signature %d: signs %s (%q), not this manifest", i, p.Critical.Image.DockerManifestDigest, p.Critical.Type)
		}
	}
	return nil
}

// verifyAttestations checks every attestation of the manifest of digest d
// and returns their predicate types.
func verifyAttestations(src source, pub *ecdsa.PublicKey, d v1.Hash) ([]string, error) {
	payloads, annotations, err := artifactLayers(src, d, "att")
	if err != nil {
		return nil, err
	}
	var types []string
	for i, payload := range payloads {
		st, err := openEnvelope(pub, payload)
		if err != nil {
			return nil, fmt.Errorf("attestation %d: %w", i, err)
		}
		if annotations[i][predicateAnnotation] != st.PredicateType {
			return nil, fmt.Errorf("attestation %d: annotated %q, states %q", i, annotations[i][predicateAnnotation], st.PredicateType)
		}
		if !slices.ContainsFunc(st.Subject, func(s subject) bool { return s.Digest[d.Algorithm] == d.Hex }) {
			return nil, fmt.Errorf("attestation %d (%s): not about this manifest", i, st.PredicateType)
		}
		types = append(types, st.PredicateType)
	}
	return types, nil
}

// openEnvelope verifies a DSSE envelope's signature and returns its
// in-toto statement.
func openEnvelope(pub *ecdsa.PublicKey, data []byte) (statement, error) {
	var env envelope
	var st statement
	if err := json.Unmarshal(data, &env); err != nil {
		return st, fmt.Errorf("not a DSSE envelope: %w", err)
	}
	if env.PayloadType != inTotoPayloadType {
		return st, fmt.Errorf("payload type %q, want %s", env.PayloadType, inTotoPayloadType)
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return st, fmt.Errorf("payload: %w", err)
	}
	if len(env.Signatures) == 0 {
		return st, errors.New("the envelope holds no signature")
	}
	for _, s := range env.Signatures {
		if err := verifyBytes(pub, pae(env.PayloadType, payload), s.Sig); err != nil {
			return st, err
		}
	}
	if err := json.Unmarshal(payload, &st); err != nil {
		return st, fmt.Errorf("statement: %w", err)
	}
	// cosign's own attest writes v0.1 statements; the subjects and the
	// predicate are where v1 has them.
	if st.Type != inTotoStatementType && st.Type != "https://in-toto.io/Statement/v0.1" {
		return st, fmt.Errorf("statement type %q, want %s", st.Type, inTotoStatementType)
	}
	return st, nil
}

// verify checks an image of a layout or a registry with a public key
// (verifyImage), and prints what it verified.
func verify(args []string) error {
	fs := flag.NewFlagSet("ociimage verify", flag.ContinueOnError)
	keyPath := fs.String("key", "", "the public key (cosign.pub)")
	dir := fs.String("layout", "", "the OCI image layout holding the image")
	tag := fs.String("tag", "", "the image's tag in the layout")
	image := fs.String("image", "", "or the image in a registry, REPOSITORY:TAG")
	insecure := fs.Bool("insecure", false, "reach the registry of -image over plain HTTP")
	layers := fs.Bool("layers", true, "read every layer and check its digest (false: only manifests and configurations, for a layout whose blobs SHA256SUMS checked)")
	var required multiFlag
	fs.Var(&required, "require", "a predicate type that must be attested (repeatable; default "+slsaProvenanceV1+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keyPath == "" || (*image == "") == (*dir == "" || *tag == "") || fs.NArg() != 0 {
		return errors.New("usage: ociimage verify -key PUBLIC.pem (-layout DIR -tag TAG | -image REPOSITORY:TAG [-insecure]) [-require PREDICATE-TYPE]...")
	}
	if len(required) == 0 {
		required = multiFlag{slsaProvenanceV1}
	}
	pub, err := loadPublicKey(*keyPath)
	if err != nil {
		return err
	}
	src := layoutSource(*dir, *tag)
	what := *dir + ":" + *tag
	if *image != "" {
		var opts []name.Option
		if *insecure {
			opts = append(opts, name.Insecure)
		}
		ref, err := name.ParseReference(*image, opts...)
		if err != nil {
			return fmt.Errorf("-image %q: %w", *image, err)
		}
		src, what = registrySource(ref), *image
	}
	var opts []validate.Option
	if !*layers {
		opts = append(opts, validate.Fast)
	}
	report, err := verifyImage(src, pub, required, opts...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, line := range report {
		fmt.Println(line)
	}
	return nil
}

// verifyBlob checks a FILE.sig of sign-blob (or `cosign sign-blob`).
func verifyBlob(args []string) error {
	fs := flag.NewFlagSet("ociimage verify-blob", flag.ContinueOnError)
	keyPath := fs.String("key", "", "the public key (cosign.pub)")
	sigPath := fs.String("signature", "", "the signature file (default FILE.sig)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keyPath == "" || fs.NArg() != 1 {
		return errors.New("usage: ociimage verify-blob -key PUBLIC.pem [-signature FILE.sig] FILE")
	}
	file := fs.Arg(0)
	if *sigPath == "" {
		*sigPath = file + ".sig"
	}
	pub, err := loadPublicKey(*keyPath)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	sig, err := os.ReadFile(*sigPath)
	if err != nil {
		return err
	}
	if err := verifyBytes(pub, data, string(sig)); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	fmt.Println(file + ": signature verified")
	return nil
}
