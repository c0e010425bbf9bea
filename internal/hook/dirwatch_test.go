package hook

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/testoperator"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFingerprintSeesAConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	testoperator.ConfigMapVolume(t, dir, "1", map[string]string{"a.sh": "#!/bin/sh\necho 1\n"})
	first := Fingerprint(dir, FolderOptions{})
	if again := Fingerprint(dir, FolderOptions{}); again != first {
		t.Fatal("the fingerprint of an unchanged folder changed")
	}
	testoperator.ConfigMapVolume(t, dir, "2", map[string]string{"a.sh": "#!/bin/sh\necho 2\n"})
	if Fingerprint(dir, FolderOptions{}) == first {
		t.Error("swapping ..data to a new version (same sizes and times) left the fingerprint as it was")
	}
	// A hidden file is not a hook and is not looked at.
	second := Fingerprint(dir, FolderOptions{})
	must(t, os.WriteFile(filepath.Join(dir, ".notes"), []byte("x"), 0o644))
	if Fingerprint(dir, FolderOptions{}) != second {
		t.Error("a dot-file changed the fingerprint")
	}
	must(t, os.Chmod(filepath.Join(dir, "..v2", "a.sh"), 0o644))
	if Fingerprint(dir, FolderOptions{}) == second {
		t.Error("a hook losing its executable bit left the fingerprint as it was")
	}
}

// WatchDir tells of a new hook, of a ConfigMap swap, and of a file in a
// folder added after it started; a burst of writes is one change, and a
// folder that did not change calls nothing.
func TestWatchDirCallsOnChange(t *testing.T) {
	dir := t.TempDir()
	testoperator.ConfigMapVolume(t, dir, "1", map[string]string{"a.sh": "#!/bin/sh\n"})
	since := Fingerprint(dir, FolderOptions{})
	changes := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		WatchDir(ctx, dir, since, WatchOptions{Quiet: 100 * time.Millisecond, Poll: time.Hour, Warn: func(m string) { t.Log(m) }}, func() {
			changes <- Fingerprint(dir, FolderOptions{})
		})
	}()
	expect := func(what string) {
		t.Helper()
		select {
		case <-changes:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no change reported within 5s", what)
		}
	}
	none := func(what string) {
		t.Helper()
		select {
		case <-changes:
			t.Fatalf("%s: a change was reported", what)
		case <-time.After(400 * time.Millisecond):
		}
	}
	none("nothing changed")
	testoperator.ConfigMapVolume(t, dir, "2", map[string]string{"a.sh": "#!/bin/sh\necho two\n", "b.sh": "#!/bin/sh\n"})
	expect("a ConfigMap swap adding b.sh")
	none("after the swap")
	sub := filepath.Join(dir, "sub")
	must(t, os.Mkdir(sub, 0o755))
	for i := range 5 {
		must(t, os.WriteFile(filepath.Join(sub, "c.sh"), []byte("#!/bin/sh\n# "+string(rune('0'+i))+"\n"), 0o755))
	}
	expect("a new folder with a hook written five times")
	none("a burst of writes is one change")
	must(t, os.WriteFile(filepath.Join(sub, "c.sh"), []byte("#!/bin/sh\n# changed\n"), 0o755))
	expect("a hook changed in the new folder")
	cancel()
	<-done
}

// A hook that is a symlink to a file outside the folder (allowed with
// AllowExternalSymlinks) changes where inotify does not look: the poll
// sees it, once it holds still for the quiet period.
func TestWatchDirPollsWhatInotifyCannotSee(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "real.sh")
	must(t, os.WriteFile(target, []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Symlink(target, filepath.Join(dir, "a.sh")))
	folder := FolderOptions{AllowExternalSymlinks: true}
	since := Fingerprint(dir, folder)
	changes := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		WatchDir(ctx, dir, since, WatchOptions{Quiet: 100 * time.Millisecond, Poll: 300 * time.Millisecond, Folder: folder}, func() {
			changes <- struct{}{}
		})
	}()
	must(t, os.WriteFile(target, []byte("#!/bin/sh\necho changed\n"), 0o755))
	select {
	case <-changes:
	case <-time.After(5 * time.Second):
		t.Fatal("a change of a symlinked hook outside the folder was not reported within 5s")
	}
	select {
	case <-changes:
		t.Fatal("one change was reported twice")
	case <-time.After(time.Second):
	}
	cancel()
	<-done
}
