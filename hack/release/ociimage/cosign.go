package main

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The formats cosign writes to a registry and reads back with `cosign
// verify` and `cosign verify-attestation` (the tag-based ones, which every
// cosign release and the policy engines read; not the Sigstore bundles
// that cosign 3 also stores as OCI referrers):
//
//   - The signature of a manifest (image or index) of digest sha256:HEX is
//     an image tagged sha256-HEX.sig in the same repository. Each layer is
//     a simple-signing payload (simpleSigningType) that names the digest;
//     its annotation signatureAnnotation holds the base64 of an ECDSA
//     signature of the payload's SHA-256.
//   - Its attestations are an image tagged sha256-HEX.att. Each layer is a
//     DSSE envelope (dsseType) of an in-toto statement whose subjects
//     include the digest; the envelope's signature is over DSSE's
//     pre-authentication encoding (pae). The layer's annotations name the
//     predicate type and carry an empty signatureAnnotation.
//   - A file (the chart) is signed as `cosign sign-blob` does: the base64
//     of an ECDSA signature of the file's SHA-256, in FILE.sig.
const (
	simpleSigningType   types.MediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	dsseType            types.MediaType = "application/vnd.dsse.envelope.v1+json"
	signatureAnnotation                 = "dev.cosignproject.cosign/signature"
	predicateAnnotation                 = "predicateType"
	inTotoPayloadType                   = "application/vnd.in-toto+json"
	inTotoStatementType                 = "https://in-toto.io/Statement/v1"
	simpleSigningClaim                  = "cosign container image signature"

	// The predicate types `cosign verify-attestation --type` names
	// slsaprovenance1 and cyclonedx.
	slsaProvenanceV1 = "https://slsa.dev/provenance/v1"
	cycloneDX        = "https://cyclonedx.org/bom"
)

// tagFor returns the tag under which cosign looks for the signatures
// (suffix "sig") or attestations ("att") of the manifest of digest d.
func tagFor(d v1.Hash, suffix string) string {
	return d.Algorithm + "-" + d.Hex + "." + suffix
}

// simpleSigning is the payload of an image signature: the claim that the
// manifest of digest names repository's image.
type simpleSigning struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]any `json:"optional"`
}

// simpleSigningPayload is the payload cosign signs for digest in repository.
func simpleSigningPayload(repository string, digest v1.Hash) ([]byte, error) {
	var p simpleSigning
	p.Critical.Identity.DockerReference = repository
	p.Critical.Image.DockerManifestDigest = digest.String()
	p.Critical.Type = simpleSigningClaim
	return json.Marshal(p)
}

// signBytes returns the base64 of key's ASN.1 ECDSA signature of data's SHA-256.
func signBytes(key *ecdsa.PrivateKey, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// verifyBytes checks a base64 signature of signBytes against data.
func verifyBytes(pub *ecdsa.PublicKey, data []byte, b64sig string) error {
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64sig))
	if err != nil {
		return fmt.Errorf("signature is not base64: %w", err)
	}
	sum := sha256.Sum256(data)
	if !ecdsa.VerifyASN1(pub, sum[:], sig) {
		return fmt.Errorf("signature does not verify with the public key")
	}
	return nil
}

// pae is DSSE's pre-authentication encoding of a payload and its type:
// what an envelope's signatures sign.
func pae(payloadType string, payload []byte) []byte {
	return []byte(fmt.Sprintf("DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(payload), payload))
}

// envelope is a DSSE envelope.
type envelope struct {
	PayloadType string `json:"payloadType"`
	Payload     string `json:"payload"`
	Signatures  []struct {
		KeyID string `json:"keyid"`
		Sig   string `json:"sig"`
	} `json:"signatures"`
}

// subject is an in-toto resource descriptor: what a statement is about.
type subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// statement is an in-toto v1 statement.
type statement struct {
	Type          string          `json:"_type"`
	Subject       []subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

// attestation is a signed statement: the DSSE envelope of a layer of an
// .att image, and its predicate type.
type attestation struct {
	predicateType string
	envelope      []byte
}

// attest signs an in-toto statement of predicate about subjects.
func attest(key *ecdsa.PrivateKey, predicateType string, predicate []byte, subjects []subject) (attestation, error) {
	if !json.Valid(predicate) {
		return attestation{}, fmt.Errorf("predicate %s: not JSON", predicateType)
	}
	st, err := json.Marshal(statement{Type: inTotoStatementType, Subject: subjects, PredicateType: predicateType, Predicate: predicate})
	if err != nil {
		return attestation{}, err
	}
	sig, err := signBytes(key, pae(inTotoPayloadType, st))
	if err != nil {
		return attestation{}, err
	}
	env := envelope{PayloadType: inTotoPayloadType, Payload: base64.StdEncoding.EncodeToString(st)}
	env.Signatures = append(env.Signatures, struct {
		KeyID string `json:"keyid"`
		Sig   string `json:"sig"`
	}{"", sig})
	data, err := json.Marshal(env)
	return attestation{predicateType: predicateType, envelope: data}, err
}

// signatureImage is the .sig image of one simple-signing payload and its
// signature.
func signatureImage(payload []byte, b64sig string) (v1.Image, error) {
	return artifactImage(mutate.Addendum{
		Layer:       static.NewLayer(payload, simpleSigningType),
		Annotations: map[string]string{signatureAnnotation: b64sig},
	})
}

// attestationImage is the .att image of attestations, a layer each.
func attestationImage(atts []attestation) (v1.Image, error) {
	var adds []mutate.Addendum
	for _, a := range atts {
		adds = append(adds, mutate.Addendum{
			Layer:       static.NewLayer(a.envelope, dsseType),
			Annotations: map[string]string{predicateAnnotation: a.predicateType, signatureAnnotation: ""},
		})
	}
	return artifactImage(adds...)
}

// artifactImage is an OCI image of the layers, as cosign writes them: an
// OCI manifest with an (almost) empty configuration.
func artifactImage(layers ...mutate.Addendum) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	return mutate.Append(img, layers...)
}

// manifestDigests returns the digest of an index and of each of its manifests.
func manifestDigests(idx v1.ImageIndex) ([]v1.Hash, error) {
	d, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	digests := []v1.Hash{d}
	for _, c := range m.Manifests {
		digests = append(digests, c.Digest)
	}
	return digests, nil
}
