package testoperator

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ConfigMapVolume lays dir out as the kubelet lays out a ConfigMap volume,
// and updates it as the kubelet does: the files of each version go into a
// hidden folder of their own ("..v<version>"), "..data" is a symlink to
// the current one, swapped atomically (a new symlink renamed over it), and
// each key is a symlink through "..data". Files get mode 0755 and one
// fixed modification time, so that only the swap tells versions apart.
// Keys missing from a later version are removed, as the kubelet does.
func ConfigMapVolume(t testing.TB, dir, version string, files map[string]string) {
	t.Helper()
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ts := filepath.Join(dir, "..v"+version)
	check(os.Mkdir(ts, 0o755))
	stamp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, content := range files {
		p := filepath.Join(ts, name)
		check(os.WriteFile(p, []byte(content), 0o755))
		check(os.Chtimes(p, stamp, stamp))
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			check(os.Symlink(filepath.Join("..data", name), link))
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	check(os.Symlink(filepath.Base(ts), tmp))
	check(os.Rename(tmp, filepath.Join(dir, "..data")))
	entries, err := os.ReadDir(dir)
	check(err)
	for _, e := range entries {
		if name := e.Name(); name[0] != '.' {
			if _, ok := files[name]; !ok {
				check(os.Remove(filepath.Join(dir, name)))
			}
		}
	}
}
