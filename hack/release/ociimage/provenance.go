package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// provenanceBuildType names how a release is built: the steps of
// hack/release/release.sh, whose parameters are the predicate's
// externalParameters.
const provenanceBuildType = "https://github.com/hook-operator/hook-operator/tree/main/hack/release#release.sh@v1"

// descriptor is an in-toto resource descriptor, as SLSA's
// resolvedDependencies and byproducts hold them.
type descriptor struct {
	Name        string            `json:"name,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Digest      map[string]string `json:"digest,omitempty"`
	Annotations map[string]any    `json:"annotations,omitempty"`
}

// slsaProvenance is a SLSA v1 provenance predicate (slsaProvenanceV1).
type slsaProvenance struct {
	BuildDefinition struct {
		BuildType            string         `json:"buildType"`
		ExternalParameters   map[string]any `json:"externalParameters"`
		InternalParameters   map[string]any `json:"internalParameters,omitempty"`
		ResolvedDependencies []descriptor   `json:"resolvedDependencies"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct {
			ID string `json:"id"`
		} `json:"builder"`
		Metadata struct {
			InvocationID string `json:"invocationId,omitempty"`
			StartedOn    string `json:"startedOn,omitempty"`
			FinishedOn   string `json:"finishedOn,omitempty"`
		} `json:"metadata"`
	} `json:"runDetails"`
}

// multiFlag collects a flag given more than once.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// provenance writes the SLSA v1 provenance predicate of a release's image
// (makeProvenance) to stdout.
func provenance(args []string) error {
	p, err := makeProvenance(args)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(p)
	return err
}

// makeProvenance returns the SLSA v1 provenance predicate of a release's
// image: what was built (the tag, from which commit, with which
// command, by which builder) and from what (the Go toolchain, the module
// sums, each Debian root's package sources and packages).
func makeProvenance(args []string) ([]byte, error) {
	fs := flag.NewFlagSet("ociimage provenance", flag.ContinueOnError)
	tag := fs.String("tag", "", "the image's tag")
	source := fs.String("source", "", "the source repository, like git+https://github.com/hook-operator/hook-operator")
	commit := fs.String("commit", "", "the source commit (40 hex digits)")
	command := fs.String("command", "", "the build command, like `make release VERSION=v1.2.3`")
	builder := fs.String("builder", "", "the builder's id: the CI run's URL, or the machine that built it")
	invocation := fs.String("invocation", "", "an id of this build (the CI run), if any")
	started := fs.String("started", "", "when the build started, RFC 3339")
	goVersion := fs.String("go", "", "the Go toolchain, as `go env GOVERSION GOHOSTOS GOHOSTARCH` prints it")
	goBinary := fs.String("go-binary", "", "the go command that built it (its digest is recorded)")
	var sums, roots multiFlag
	fs.Var(&sums, "sum", "a go.sum or lock file of the build (hack/release/debian.lock), relative to the repository root, as PATH=FILE (repeatable)")
	fs.Var(&roots, "root", "a Debian root of the image, as OS/ARCH=ROOT.tar (repeatable)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *tag == "" || *source == "" || len(*commit) != 40 || *command == "" || *builder == "" || *goVersion == "" || fs.NArg() != 0 {
		return nil, errors.New("usage: ociimage provenance -tag TAG -source URI -commit SHA(40) -command CMD -builder ID -go VERSION [-go-binary PATH] [-started TIME] [-invocation ID] [-sum PATH=FILE]... [-root OS/ARCH=ROOT.tar]...")
	}
	var p slsaProvenance
	p.BuildDefinition.BuildType = provenanceBuildType
	p.BuildDefinition.ExternalParameters = map[string]any{
		"tag":     *tag,
		"command": *command,
		"source":  descriptor{URI: *source, Digest: map[string]string{"gitCommit": *commit}},
	}
	p.BuildDefinition.InternalParameters = map[string]any{"go": *goVersion}
	deps := []descriptor{{Name: "source", URI: *source, Digest: map[string]string{"gitCommit": *commit}}}

	toolchain := descriptor{Name: "go toolchain", URI: "https://go.dev/dl/", Annotations: map[string]any{"version": *goVersion}}
	if *goBinary != "" {
		d, err := fileSHA256(*goBinary)
		if err != nil {
			return nil, fmt.Errorf("-go-binary: %w", err)
		}
		toolchain.Digest = map[string]string{"sha256": d}
	}
	deps = append(deps, toolchain)

	for _, s := range sums {
		rel, file, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("-sum %q: give PATH=FILE, like go.sum=/src/go.sum", s)
		}
		d, err := fileSHA256(file)
		if err != nil {
			return nil, fmt.Errorf("-sum %s: %w", rel, err)
		}
		deps = append(deps, descriptor{Name: rel, URI: *source + "@" + *commit + "#" + rel, Digest: map[string]string{"sha256": d}})
	}
	for _, r := range roots {
		platform, file, ok := strings.Cut(r, "=")
		if !ok || !strings.Contains(platform, "/") {
			return nil, fmt.Errorf("-root %q: give OS/ARCH=ROOT.tar", r)
		}
		rootDeps, err := debianRoot(platform, file)
		if err != nil {
			return nil, fmt.Errorf("-root %s: %w", platform, err)
		}
		deps = append(deps, rootDeps...)
	}
	p.BuildDefinition.ResolvedDependencies = deps
	p.RunDetails.Builder.ID = *builder
	p.RunDetails.Metadata.InvocationID = *invocation
	p.RunDetails.Metadata.StartedOn = *started
	p.RunDetails.Metadata.FinishedOn = time.Now().UTC().Format(time.RFC3339)
	out, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// fileSHA256 is the hex SHA-256 of a file.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// debianRoot describes a Debian root tar (rootfs.sh's): the tar itself
// with the package sources it was built from (its /etc/apt/sources.list),
// and each package installed in it (its dpkg status) as a package URL.
func debianRoot(platform, file string) ([]descriptor, error) {
	d, err := fileSHA256(file)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var sources []string
	var status []byte
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch {
		case name == "var/lib/dpkg/status":
			if status, err = io.ReadAll(tr); err != nil {
				return nil, err
			}
		case name == "etc/apt/sources.list" || strings.HasPrefix(name, "etc/apt/sources.list.d/") && h.Typeflag == tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			for _, line := range strings.Split(string(data), "\n") {
				if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
					sources = append(sources, line)
				}
			}
		}
	}
	if status == nil {
		return nil, fmt.Errorf("%s holds no var/lib/dpkg/status: not a root of rootfs.sh", file)
	}
	pkgs, err := dpkgPackages(status)
	if err != nil {
		return nil, fmt.Errorf("%s: dpkg status: %w", file, err)
	}
	deps := []descriptor{{
		Name:        "debian root " + platform + " " + filepath.Base(file),
		Digest:      map[string]string{"sha256": d},
		Annotations: map[string]any{"sources": sources, "packages": len(pkgs)},
	}}
	for _, p := range pkgs {
		deps = append(deps, descriptor{Name: p.name, URI: p.purl(), Annotations: map[string]any{"platform": platform}})
	}
	return deps, nil
}

// debPackage is one package of a dpkg status file.
type debPackage struct{ name, version, arch string }

// purl is the package URL of a Debian package.
func (p debPackage) purl() string {
	return "pkg:deb/debian/" + p.name + "@" + strings.ReplaceAll(p.version, ":", "%3A") + "?arch=" + p.arch
}

// dpkgPackages reads the packages of a dpkg status file, sorted by name.
func dpkgPackages(status []byte) ([]debPackage, error) {
	var pkgs []debPackage
	var cur debPackage
	flush := func() {
		if cur.name != "" {
			pkgs = append(pkgs, cur)
		}
		cur = debPackage{}
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		field, value, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, " ") {
			continue
		}
		value = strings.TrimSpace(value)
		switch field {
		case "Package":
			cur.name = value
		case "Version":
			cur.version = value
		case "Architecture":
			cur.arch = value
		}
	}
	flush()
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].name < pkgs[j].name })
	return pkgs, sc.Err()
}
