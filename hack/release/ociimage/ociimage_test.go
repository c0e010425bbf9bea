package main

import (
	"archive/tar"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// layerTar writes a tar holding one file and returns its path.
func layerTar(t *testing.T, file, content string) string {
	t.Helper()
	return writeTar(t, strings.ReplaceAll(file, "/", "_")+".tar", 0o755, map[string]string{file: content})
}

// writeTar writes a tar named name in a new folder, holding files (by name,
// in name order) with the given mode, and returns its path.
func writeTar(t *testing.T, name string, mode int64, files map[string]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := tar.NewWriter(f)
	for _, file := range slices.Sorted(maps.Keys(files)) {
		content := files[file]
		if err := w.WriteHeader(&tar.Header{Name: file, Mode: mode, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// buildLayout builds two tags of a two-platform image into a new layout.
func buildLayout(t *testing.T) string {
	t.Helper()
	return buildInto(t, filepath.Join(t.TempDir(), "oci"))
}

// buildInto builds two tags of a two-platform image into the layout dir.
func buildInto(t *testing.T, dir string) string {
	t.Helper()
	config := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(config, []byte(`{"Entrypoint":["/bin/x"],"User":"65532:65532","Env":["A=1"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	root := layerTar(t, "bin/sh", "root")
	for _, tag := range []string{"v1.2.3", "v1.2.3-python"} {
		args := []string{"-layout", dir, "-tag", tag, "-config", config, "-created", "2026-01-02T03:04:05Z",
			"linux/amd64=" + root + "," + layerTar(t, "bin/x", "amd64 "+tag),
			"linux/arm64=" + root + "," + layerTar(t, "bin/x", "arm64 "+tag)}
		if err := build(args); err != nil {
			t.Fatalf("build %v: %v", args, err)
		}
	}
	return dir
}

// build writes an index per tag into one layout, an image per platform,
// with the platform and the configuration given.
func TestBuild(t *testing.T) {
	dir := buildLayout(t)
	for _, tag := range []string{"v1.2.3", "v1.2.3-python"} {
		idx, err := taggedIndex(dir, tag)
		if err != nil {
			t.Fatal(err)
		}
		manifest, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(manifest.Manifests) != 2 {
			t.Fatalf("%s: %d images, want 2", tag, len(manifest.Manifests))
		}
		for _, m := range manifest.Manifests {
			img, err := idx.Image(m.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Architecture != m.Platform.Architecture || cf.OS != "linux" {
				t.Errorf("%s: image of platform %s has os/arch %s/%s", tag, m.Platform, cf.OS, cf.Architecture)
			}
			if cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Created.Year() != 2026 {
				t.Errorf("%s %s: config %+v created %v, want the given one", tag, m.Platform, cf.Config, cf.Created)
			}
			if layers, _ := img.Layers(); len(layers) != 2 {
				t.Errorf("%s %s: %d layers, want 2", tag, m.Platform, len(layers))
			}
		}
	}
	// Building the tags again replaces them.
	buildInto(t, dir)
	after, _ := os.ReadFile(filepath.Join(dir, "index.json"))
	if n := strings.Count(string(after), "org.opencontainers.image.ref.name"); n != 2 {
		t.Errorf("index.json holds %d tagged entries after building both tags twice, want 2:\n%s", n, after)
	}

	for _, bad := range [][]string{
		{"-layout", dir, "-tag", "x", "-config", "/nonexistent.json", "linux/amd64=a.tar"},
		{"-layout", dir, "-tag", "x", "-config", "c.json", "linux-amd64"},
	} {
		if err := build(bad); err == nil {
			t.Errorf("build %v: no error", bad)
		}
	}
	if err := build([]string{"-layout", dir, "-tag", "x", "-config", "c.json", "-created", "yesterday", "linux/amd64=a.tar"}); err == nil || !strings.Contains(err.Error(), "-created") {
		t.Errorf("a bad -created: %v, want an error naming -created", err)
	}
}

// push writes the tagged index with every image to a registry, which then
// serves the same digest for both platforms.
func TestPush(t *testing.T) {
	dir := buildLayout(t)
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/ops/hook-operator"
	if err := push([]string{"-layout", dir, "-tag", "v1.2.3-python", "-to", repo}); err != nil {
		t.Fatal(err)
	}
	want, err := taggedIndex(dir, "v1.2.3-python")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(repo+":v1.2.3-python", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("the pushed index: %v", err)
	}
	wd, _ := want.Digest()
	gd, _ := got.Digest()
	if wd != gd {
		t.Errorf("the registry serves %s, want the layout's %s", gd, wd)
	}
	manifest, _ := got.IndexManifest()
	for _, m := range manifest.Manifests {
		if _, err := got.Image(m.Digest); err != nil {
			t.Errorf("platform %s: %v", m.Platform, err)
		}
	}

	if err := push([]string{"-layout", dir, "-tag", "v9", "-to", repo}); err == nil || !strings.Contains(err.Error(), `no image tagged "v9"`) {
		t.Errorf("an unknown tag: %v, want an error naming it", err)
	}
	if err := push([]string{"-layout", dir, "-tag", "v1.2.3", "-to", "Bad Repo"}); err == nil || !strings.Contains(err.Error(), "-to") {
		t.Errorf("a bad repository: %v, want an error naming -to", err)
	}
}
