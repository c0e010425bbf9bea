package hook

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// outside makes a folder beside the hooks folder with an executable that
// would create marker if it were ever run, as /usr/bin's programs would
// do whatever they do when run with --config.
func outside(t *testing.T) (dir, marker string) {
	t.Helper()
	dir = t.TempDir()
	marker = filepath.Join(t.TempDir(), "ran")
	script(t, dir, "tool", "touch "+marker+"\n"+`echo '{"configVersion":"v1","onStartup":1}'`)
	return dir, marker
}

// A symlink whose target is outside the hooks folder, to a folder or to a
// file, is skipped with a warning that names it, its target and the flag;
// with the flag it is followed.
func TestDiscoverRefusesSymlinksOut(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "ok.sh", "")
	out, _ := outside(t)
	symlink(t, out, filepath.Join(dir, "bin"))
	symlink(t, filepath.Join(out, "tool"), filepath.Join(dir, "tool.sh"))
	symlink(t, "../"+filepath.Base(out)+"/tool", filepath.Join(dir, "relative.sh"))

	names, _, warnings, err := Discover(dir, FolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ok.sh"}; !reflect.DeepEqual(names, want) {
		t.Errorf("hooks = %q, want %q: links out of the folder must not be hooks", names, want)
	}
	if len(warnings) != 3 {
		t.Fatalf("warnings = %q, want one per link out", warnings)
	}
	for i, link := range []string{"bin", "relative.sh", "tool.sh"} {
		w := warnings[i]
		if !strings.HasPrefix(w, "skipping "+link+": symlink to "+out) || !strings.Contains(w, "outside the hooks folder") ||
			!strings.Contains(w, AllowExternalSymlinksFlag) {
			t.Errorf("warning %q does not name %s, its target in %s, and %s", w, link, out, AllowExternalSymlinksFlag)
		}
	}

	names, _, warnings, err = Discover(dir, FolderOptions{AllowExternalSymlinks: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"bin/tool", "ok.sh", "relative.sh", "tool.sh"}; !reflect.DeepEqual(names, want) || len(warnings) != 0 {
		t.Errorf("allowed: hooks = %q, warnings = %q; want %q and none", names, warnings, want)
	}
}

// Links that resolve inside the folder are followed, however they are
// written: relative, absolute, through "..", from a hooks folder that is
// itself a symlink.
func TestDiscoverFollowsSymlinksInside(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	script(t, real, "sub/a.sh", "")
	symlink(t, "sub/a.sh", filepath.Join(real, "relative.sh"))
	symlink(t, filepath.Join(real, "sub", "a.sh"), filepath.Join(real, "absolute.sh"))
	symlink(t, "../real/sub/a.sh", filepath.Join(real, "roundabout.sh"))
	symlink(t, "sub", filepath.Join(real, "linked"))
	dir := filepath.Join(base, "hooks")
	symlink(t, "real", dir)

	names, _, warnings, err := Discover(dir, FolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"absolute.sh", "linked/a.sh", "relative.sh", "roundabout.sh", "sub/a.sh"}
	if !reflect.DeepEqual(names, want) || len(warnings) != 0 {
		t.Errorf("hooks = %q, warnings = %q; want %q and none", names, warnings, want)
	}
}

// Load never runs what a link out leads to, and says why on Warn; the
// flag lets it run.
func TestLoadDoesNotRunSymlinksOut(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "ok.sh", `echo '{"configVersion":"v1","onStartup":1}'`)
	out, marker := outside(t)
	symlink(t, out, filepath.Join(dir, "bin"))
	var warned []string
	hooks, err := Load(context.Background(), dir, LoadOptions{Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := hookNames(hooks); !reflect.DeepEqual(got, []string{"ok.sh"}) {
		t.Errorf("hooks = %q, want only ok.sh", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program behind the link out was run with --config")
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "bin: symlink to "+out) {
		t.Errorf("warnings = %q, want one naming bin and %s", warned, out)
	}

	hooks, err = Load(context.Background(), dir, LoadOptions{Folder: FolderOptions{AllowExternalSymlinks: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := hookNames(hooks); !reflect.DeepEqual(got, []string{"bin/tool", "ok.sh"}) {
		t.Errorf("allowed: hooks = %q, want bin/tool and ok.sh", got)
	}
}

// The watcher does not walk a folder out of the hooks folder (a link to /
// would have it stat the whole machine every poll), but sees the link
// itself change; with the flag it sees inside the folder out.
func TestFingerprintStaysInTheFolder(t *testing.T) {
	dir := t.TempDir()
	out, _ := outside(t)
	symlink(t, out, filepath.Join(dir, "bin"))
	before := Fingerprint(dir, FolderOptions{})
	allowed := Fingerprint(dir, FolderOptions{AllowExternalSymlinks: true})
	script(t, out, "new", "")
	if Fingerprint(dir, FolderOptions{}) != before {
		t.Error("a file added to the folder a link out leads to changed the fingerprint: the watcher walked out of the hooks folder")
	}
	if Fingerprint(dir, FolderOptions{AllowExternalSymlinks: true}) == allowed {
		t.Errorf("with %s, a file added behind the link did not change the fingerprint", AllowExternalSymlinksFlag)
	}
	must(t, os.Remove(filepath.Join(dir, "bin")))
	symlink(t, t.TempDir(), filepath.Join(dir, "bin"))
	if Fingerprint(dir, FolderOptions{}) == before {
		t.Error("pointing the link elsewhere left the fingerprint as it was")
	}
}

// discoverWithin runs Discover, failing the test instead of hanging when
// it does not return within a (generous) bound; unblock ends a Discover
// stuck in the file system so that the test binary can go on.
func discoverWithin(t *testing.T, dir string, opts FolderOptions, unblock func()) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, _, _, err := Discover(dir, opts)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		unblock()
		<-done
		t.Fatal("Discover did not return within 20s")
		return nil
	}
}

// A .hookignore that is not a regular file is an error naming it and what
// to make of it, at once: a named pipe used to block start forever, and
// /dev/zero to fill its memory.
func TestHookignoreMustBeARegularFile(t *testing.T) {
	t.Run("named pipe", func(t *testing.T) {
		dir := t.TempDir()
		script(t, dir, "ok.sh", "")
		fifo := filepath.Join(dir, IgnoreFile)
		must(t, syscall.Mkfifo(fifo, 0o644))
		err := discoverWithin(t, dir, FolderOptions{}, func() {
			// A writer opening and closing the pipe lets a blocked reader see EOF.
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		})
		if err == nil || !strings.Contains(err.Error(), ".hookignore is a named pipe (FIFO), not a regular file; make it a plain text file") {
			t.Errorf("error = %v, want one saying .hookignore is a named pipe and what to make of it", err)
		}
	})
	t.Run("device", func(t *testing.T) {
		dir := t.TempDir()
		symlink(t, "/dev/zero", filepath.Join(dir, IgnoreFile))
		err := discoverWithin(t, dir, FolderOptions{AllowExternalSymlinks: true}, func() {})
		if err == nil || !strings.Contains(err.Error(), ".hookignore is a character device, not a regular file") {
			t.Errorf("error = %v, want one saying .hookignore is a device", err)
		}
		err = discoverWithin(t, dir, FolderOptions{}, func() {})
		if err == nil || !strings.Contains(err.Error(), ".hookignore is a symlink to /dev/zero, outside the hooks folder") ||
			!strings.Contains(err.Error(), AllowExternalSymlinksFlag) {
			t.Errorf("error = %v, want one naming the link out and %s", err, AllowExternalSymlinksFlag)
		}
	})
	t.Run("too large", func(t *testing.T) {
		dir := t.TempDir()
		big := strings.Repeat("# a comment line of a .hookignore file, repeated\n", MaxIgnoreFileBytes/40)
		must(t, os.WriteFile(filepath.Join(dir, IgnoreFile), []byte(big), 0o644))
		err := discoverWithin(t, dir, FolderOptions{}, func() {})
		if err == nil || !strings.Contains(err.Error(), ".hookignore is larger than 64 KiB") {
			t.Errorf("error = %v, want one saying .hookignore is larger than 64 KiB", err)
		}
		// The most allowed, on one line, still reads.
		must(t, os.WriteFile(filepath.Join(dir, IgnoreFile), []byte(strings.Repeat("x", MaxIgnoreFileBytes)), 0o644))
		if err := discoverWithin(t, dir, FolderOptions{}, func() {}); err != nil {
			t.Errorf("a .hookignore of exactly %d bytes: %v", MaxIgnoreFileBytes, err)
		}
	})
}

// A ConfigMap volume presents .hookignore as a link through "..data":
// inside the folder, so it is read.
func TestHookignoreInAConfigMapVolume(t *testing.T) {
	dir := t.TempDir()
	stamp := "..2026_11_27_10_00_00.000000001"
	tree(t, dir, map[string]os.FileMode{stamp + "/a.sh": 0o755, stamp + "/b.sh": 0o755})
	must(t, os.WriteFile(filepath.Join(dir, stamp, IgnoreFile), []byte("b.sh\n"), 0o644))
	symlink(t, stamp, filepath.Join(dir, "..data"))
	for _, key := range []string{"a.sh", "b.sh", IgnoreFile} {
		symlink(t, "..data/"+key, filepath.Join(dir, key))
	}
	names, ignored, warnings, err := Discover(dir, FolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(names, []string{"a.sh"}) || len(ignored) != 1 || ignored[0].Name != "b.sh" || len(warnings) != 0 {
		t.Errorf("hooks = %q, ignored = %v, warnings = %q; want a.sh, b.sh ignored, no warning", names, ignored, warnings)
	}
}

// File names with control characters are shown escaped in warnings and
// errors, whatever prints them.
func TestFolderMessagesEscapeControlCharacters(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir, map[string]os.FileMode{"clear\x1b[2J.txt": 0o644})
	_, _, warnings, err := Discover(dir, FolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || strings.ContainsRune(warnings[0], 0x1b) || !strings.Contains(warnings[0], `skipping clear\x1b[2J.txt`) {
		t.Errorf("warnings = %q, want the name with ESC escaped as \\x1b", warnings)
	}

	script(t, dir, "bell\a.sh", "echo not json")
	_, err = Load(context.Background(), dir, LoadOptions{})
	var problems ConfigErrors
	if !errors.As(err, &problems) {
		t.Fatalf("error = %v, want ConfigErrors", err)
	}
	if msg := err.Error(); strings.ContainsRune(msg, '\a') || !strings.Contains(msg, `hook bell\a.sh: `) {
		t.Errorf("error = %q, want the hook's name with BEL escaped", msg)
	}
}
