package hook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoint makes link lead to target, replacing it in one rename as a
// ConfigMap volume swaps its "..data".
func repoint(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".new"
	symlink(t, target, tmp)
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// loadOne loads dir, which must hold exactly the hook name.
func loadOne(t *testing.T, dir, name string, opts FolderOptions) *Hook {
	t.Helper()
	hooks, err := Load(context.Background(), dir, LoadOptions{Folder: opts})
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 1 || hooks[0].Name != name {
		t.Fatalf("loaded %q, want only %s", hookNames(hooks), name)
	}
	return hooks[0]
}

// A hook's link repointed out of the folder after the load, or a folder
// on its path repointed, fails CheckPath with an error naming the path,
// its target and the flag; repointed back inside it passes again, and
// with the flag it passes wherever it leads.
func TestCheckPathAfterARepointedLink(t *testing.T) {
	const config = `echo '{"configVersion":"v1","onStartup":1}'`
	dir := t.TempDir()
	script(t, dir, "real/a.sh", config)
	script(t, dir, "real/b.sh", config)
	out, _ := outside(t)
	symlink(t, "real/a.sh", filepath.Join(dir, "a.sh"))
	if err := os.WriteFile(filepath.Join(dir, ".hookignore"), []byte("real/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := loadOne(t, dir, "a.sh", FolderOptions{})
	if err := h.CheckPath(); err != nil {
		t.Fatalf("as loaded: %v", err)
	}

	repoint(t, filepath.Join(out, "tool"), h.Path)
	err := h.CheckPath()
	if err == nil || !strings.Contains(err.Error(), h.Path+" now leads to "+filepath.Join(out, "tool")+", outside the hooks folder") ||
		!strings.Contains(err.Error(), AllowExternalSymlinksFlag) {
		t.Errorf("repointed out: %v; want an error naming %s, its target and %s", err, h.Path, AllowExternalSymlinksFlag)
	}
	allowed := *h
	allowed.folder.opts.AllowExternalSymlinks = true
	if err := allowed.CheckPath(); err != nil {
		t.Errorf("repointed out with links out allowed: %v", err)
	}

	repoint(t, "real/b.sh", h.Path)
	if err := h.CheckPath(); err != nil {
		t.Errorf("repointed to another hook inside: %v", err)
	}

	// A folder on the hook's path, repointed out.
	nested := t.TempDir()
	script(t, nested, "real/sub/c.sh", config)
	script(t, out, "sub/c.sh", config)
	symlink(t, "real/sub", filepath.Join(nested, "sub"))
	if err := os.WriteFile(filepath.Join(nested, ".hookignore"), []byte("real/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := loadOne(t, nested, "sub/c.sh", FolderOptions{})
	repoint(t, filepath.Join(out, "sub"), filepath.Join(nested, "sub"))
	if err := c.CheckPath(); err == nil || !strings.Contains(err.Error(), filepath.Join(out, "sub", "c.sh")) {
		t.Errorf("folder repointed out: %v; want an error naming %s", err, filepath.Join(out, "sub", "c.sh"))
	}
}

// A hooks folder swapped as a whole (the folder given is a link, and it
// now leads to a new copy) is judged as it is now; a hook removed since
// the load passes, for exec to report; a hook not loaded from a folder
// is not checked.
func TestCheckPathFollowsTheFolderItself(t *testing.T) {
	const config = `echo '{"configVersion":"v1","onStartup":1}'`
	base := t.TempDir()
	script(t, base, "rev1/a.sh", config)
	script(t, base, "rev2/a.sh", config)
	dir := filepath.Join(base, "hooks")
	symlink(t, "rev1", dir)
	h := loadOne(t, dir, "a.sh", FolderOptions{})
	repoint(t, "rev2", dir)
	if err := os.RemoveAll(filepath.Join(base, "rev1")); err != nil {
		t.Fatal(err)
	}
	if err := h.CheckPath(); err != nil {
		t.Errorf("folder swapped to a new copy: %v", err)
	}
	if err := os.Remove(filepath.Join(base, "rev2", "a.sh")); err != nil {
		t.Fatal(err)
	}
	if err := h.CheckPath(); err != nil {
		t.Errorf("hook removed: %v; want nil, for exec to report", err)
	}
	out, _ := outside(t)
	if err := (&Hook{Name: "tool", Path: filepath.Join(out, "tool")}).CheckPath(); err != nil {
		t.Errorf("a hook not loaded from a folder: %v", err)
	}
}
