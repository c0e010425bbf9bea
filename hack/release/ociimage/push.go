package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// push writes the index tagged -tag in -layout to -to:TAG.
func push(args []string) error {
	fs := flag.NewFlagSet("ociimage push", flag.ContinueOnError)
	dir := fs.String("layout", "", "the OCI image layout holding the image")
	tag := fs.String("tag", "", "the image's tag in the layout, and in the registry")
	to := fs.String("to", "", "the repository to push to, like ghcr.io/OWNER/hook-operator")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *tag == "" || *to == "" || fs.NArg() != 0 {
		return errors.New("usage: ociimage push -layout DIR -tag TAG -to REPOSITORY")
	}
	ref, err := name.NewTag(*to + ":" + *tag)
	if err != nil {
		return fmt.Errorf("-to %q with tag %q: %w (give a repository like ghcr.io/OWNER/hook-operator, without a tag)", *to, *tag, err)
	}
	idx, err := taggedIndex(*dir, *tag)
	if err != nil {
		return err
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if err := remote.WriteIndex(ref, idx, auth); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	// The signatures and attestations after what they sign, so that a
	// registry never serves a signature of an image it lacks.
	artifacts, err := signatureArtifacts(*dir, idx)
	if err != nil {
		return err
	}
	for _, t := range slices.Sorted(maps.Keys(artifacts)) {
		if err := remote.Write(ref.Context().Tag(t), artifacts[t], auth); err != nil {
			return fmt.Errorf("push %s: %w", ref.Context().Tag(t), err)
		}
	}
	fmt.Printf("%s@%s\n", ref, digest)
	return nil
}

// signatureArtifacts returns the images of the layout dir that sign
// wrote for idx and its images, by tag (sha256-HEX.sig, sha256-HEX.att).
func signatureArtifacts(dir string, idx v1.ImageIndex) (map[string]v1.Image, error) {
	digests, err := manifestDigests(idx)
	if err != nil {
		return nil, err
	}
	wanted := map[string]bool{}
	for _, h := range digests {
		wanted[tagFor(h, "sig")], wanted[tagFor(h, "att")] = true, true
	}
	top, tm, err := layoutTop(dir)
	if err != nil {
		return nil, err
	}
	artifacts := map[string]v1.Image{}
	for _, desc := range tm.Manifests {
		if t := desc.Annotations[refName]; wanted[t] {
			if artifacts[t], err = top.Image(desc.Digest); err != nil {
				return nil, fmt.Errorf("layout %s: %s: %w", dir, t, err)
			}
		}
	}
	return artifacts, nil
}

// taggedIndex returns the index tagged tag in the layout dir.
func taggedIndex(dir, tag string) (v1.ImageIndex, error) {
	top, manifest, err := layoutTop(dir)
	if err != nil {
		return nil, err
	}
	var tags []string
	for _, m := range manifest.Manifests {
		if m.Annotations[refName] == tag {
			return top.ImageIndex(m.Digest)
		}
		tags = append(tags, m.Annotations[refName])
	}
	return nil, fmt.Errorf("layout %s: no image tagged %q (it holds %q)", dir, tag, tags)
}

// layoutTop opens the OCI layout dir: its top index and that index's
// manifest, whose entries are named by their refName annotation.
func layoutTop(dir string) (v1.ImageIndex, *v1.IndexManifest, error) {
	path, err := layout.FromPath(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("layout %s: %w (make release writes it)", dir, err)
	}
	top, err := path.ImageIndex()
	if err != nil {
		return nil, nil, fmt.Errorf("layout %s: %w", dir, err)
	}
	manifest, err := top.IndexManifest()
	if err != nil {
		return nil, nil, fmt.Errorf("layout %s: %w", dir, err)
	}
	return top, manifest, nil
}
