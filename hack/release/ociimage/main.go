// Command ociimage assembles a multi-architecture image into an OCI image
// layout from prepared layers (build), signs it and attests its provenance
// and SBOMs in cosign's formats (provenance, sign, sign-blob, public-key;
// cosign.go), pushes an image of such a layout with its signatures to a
// registry (push), and verifies what sign wrote (verify, verify-blob). build works without a container engine and without
// running anything of the target architecture: each platform's image is its
// layer tars (a Debian root from hack/release/rootfs.sh, the image's own
// files from hack/release/files.sh) stacked onto an empty image, with the
// shared runtime configuration; the platforms' images are joined in an
// index, added to the layout under a tag (org.opencontainers.image.ref.name).
//
//	ociimage build -layout DIR -tag TAG -config CONFIG.json -created RFC3339 \
//	  linux/amd64=ROOT.tar,FILES.tar linux/arm64=ROOT.tar,FILES.tar
//	ociimage push -layout DIR -tag TAG -to REPOSITORY
//	ociimage provenance -tag TAG -source URI -commit SHA -command CMD -builder ID -go VERSION ... >PREDICATE.json
//	ociimage sign -layout DIR -tag TAG -key KEY -repository REPOSITORY -provenance PREDICATE.json [-sbom OS/ARCH=FILE]...
//	ociimage sign-blob -key KEY FILE...
//	ociimage public-key -key KEY
//	ociimage verify -key PUBLIC.pem (-layout DIR -tag TAG | -image REPOSITORY:TAG) [-require TYPE]...
//	ociimage verify-blob -key PUBLIC.pem FILE
//
// CONFIG.json holds the fields of an OCI image configuration's "config"
// (Entrypoint, Cmd, Env, User, Labels, ExposedPorts, WorkingDir). The
// layout is created if missing; a tag already in it is replaced. It prints
// the index's digest. push writes the index tagged TAG, with its images,
// to REPOSITORY:TAG, with the credentials of docker's configuration
// ($DOCKER_CONFIG, as `docker login` and CI login actions write it), and
// the signatures and attestations of the index and its images that sign
// added to the layout, and prints REPOSITORY:TAG@DIGEST. A signing key is
// a PEM file: cosign's encrypted cosign.key (its password in
// COSIGN_PASSWORD) or an unencrypted EC P-256 key.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const refName = "org.opencontainers.image.ref.name"

func main() {
	var err error
	switch cmd := strings.Join(os.Args[1:2], ""); cmd {
	case "build":
		err = build(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	case "provenance":
		err = provenance(os.Args[2:])
	case "sign":
		err = sign(os.Args[2:])
	case "sign-blob":
		err = signBlob(os.Args[2:])
	case "public-key":
		err = publicKey(os.Args[2:])
	case "verify":
		err = verify(os.Args[2:])
	case "verify-blob":
		err = verifyBlob(os.Args[2:])
	default:
		err = fmt.Errorf("command %q: give build, push, provenance, sign, sign-blob, public-key, verify or verify-blob", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

// build adds the index of the images of args to a layout.
func build(args []string) error {
	fs := flag.NewFlagSet("ociimage build", flag.ContinueOnError)
	dir := fs.String("layout", "", "the OCI image layout to add the image to")
	tag := fs.String("tag", "", "the tag of the image in the layout")
	configPath := fs.String("config", "", "JSON file with the image's runtime configuration")
	created := fs.String("created", "1970-01-01T00:00:00Z", "the images' creation time, RFC 3339")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *tag == "" || *configPath == "" || fs.NArg() == 0 {
		return errors.New("usage: ociimage build -layout DIR -tag TAG -config CONFIG.json [-created TIME] OS/ARCH=LAYER.tar[,LAYER.tar...]...")
	}
	when, err := time.Parse(time.RFC3339, *created)
	if err != nil {
		return fmt.Errorf("-created %q: %w (give a time like 2026-01-02T15:04:05Z)", *created, err)
	}
	data, err := os.ReadFile(*configPath)
	if err != nil {
		return err
	}
	var cfg v1.Config
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return fmt.Errorf("%s: %w (fields: Entrypoint, Cmd, Env, User, Labels, ExposedPorts, WorkingDir)", *configPath, err)
	}

	var idx v1.ImageIndex = empty.Index
	idx = mutate.IndexMediaType(idx, types.OCIImageIndex)
	for _, arg := range fs.Args() {
		img, platform, err := platformImage(arg, cfg, when)
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: platform},
		})
	}

	path, err := layout.FromPath(*dir)
	if err != nil {
		if path, err = layout.Write(*dir, empty.Index); err != nil {
			return fmt.Errorf("layout %s: %w", *dir, err)
		}
	}
	if err := path.ReplaceIndex(idx, match.Annotation(refName, *tag), layout.WithAnnotations(map[string]string{refName: *tag})); err != nil {
		return fmt.Errorf("layout %s: %w", *dir, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Println(digest)
	return nil
}

// platformImage builds the image of one "os/arch=layer.tar,..." argument.
func platformImage(arg string, cfg v1.Config, created time.Time) (v1.Image, *v1.Platform, error) {
	spec, layers, ok := strings.Cut(arg, "=")
	osName, arch, ok2 := strings.Cut(spec, "/")
	if !ok || !ok2 || layers == "" {
		return nil, nil, fmt.Errorf("argument %q: give OS/ARCH=LAYER.tar[,LAYER.tar...], like linux/arm64=root.tar,files.tar", arg)
	}
	platform := &v1.Platform{OS: osName, Architecture: arch}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, file := range strings.Split(layers, ",") {
		// Compressed once, kept in memory: the layer's digest needs its
		// compressed bytes, and so does the layout, which would compress
		// them again (the same bytes, twice the time).
		layer, err := tarball.LayerFromFile(file, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: layer %s: %w", spec, file, err)
		}
		if img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "hack/release: " + file[strings.LastIndex(file, "/")+1:]}}); err != nil {
			return nil, nil, fmt.Errorf("%s: layer %s: %w", spec, file, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = osName, arch
	cf.Created = v1.Time{Time: created}
	cf.Config = cfg
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, nil, err
	}
	return img, platform, nil
}
