package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/loop"
)

// Defaults of WatchOptions.
const (
	// DefaultWatchQuiet is how long the folder must stay unchanged before a
	// change counts: an editor's save, or a copy of several files, is one
	// change.
	DefaultWatchQuiet = 500 * time.Millisecond
	// DefaultWatchPoll is how often the folder is compared with how it
	// was, besides inotify's events (which file systems such as NFS do not
	// send, and which a container runtime may not allow).
	DefaultWatchPoll = 10 * time.Second
)

// WatchOptions tune WatchDir. The zero value is ready to use.
type WatchOptions struct {
	// Quiet is DefaultWatchQuiet when zero.
	Quiet time.Duration
	// Poll is DefaultWatchPoll when zero.
	Poll time.Duration
	// Warn receives problems with inotify (the folder is polled then).
	Warn func(msg string)
	// Folder says which symlinks are followed, as for Load: a folder
	// outside the hooks folder is neither walked nor watched unless
	// links out are allowed.
	Folder FolderOptions
}

// Fingerprint sums up what a reload of the hooks folder dir depends on:
// for every file and folder under it (symlinks followed as opts allows,
// names starting with "." left out as Discover does, but for the top's
// .hookignore), its path, mode, size, modification time and the real path
// it resolves to. A Kubernetes ConfigMap volume
// changes by swapping its "..data" symlink to a new folder of new files:
// the real paths change even when sizes and times do not. Two equal
// fingerprints mean no reload is needed. A folder that cannot be read
// gives a fingerprint of its error, so that it changes again when it can.
func Fingerprint(dir string, opts FolderOptions) string {
	fp, _ := scan(dir, opts)
	return fp
}

// scan walks dir once for both Fingerprint and the notifier: it returns
// the fingerprint and the real paths of dir and every folder under it.
// Only Stat is used: no file is opened, so a named pipe cannot block it.
func scan(dir string, opts FolderOptions) (fingerprint string, folders []string) {
	f := folder{dir: dir, opts: opts}
	f.real, _ = resolve(dir) // "" when dir is gone: then every link is out
	h := sha256.New()
	seen := map[string]bool{}
	addFolder := func(p string) {
		if real, err := filepath.EvalSymlinks(p); err == nil && !seen[real] {
			seen[real] = true
			folders = append(folders, real)
		}
	}
	addFolder(dir)
	var walk func(rel string, depth int)
	walk = func(rel string, depth int) {
		full := filepath.Join(dir, filepath.FromSlash(rel))
		entries, err := os.ReadDir(full)
		if err != nil {
			fmt.Fprintf(h, "%s\x00error %v\n", rel, err)
			return
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") && (rel != "" || name != IgnoreFile) {
				continue
			}
			relName := rel + "/" + name
			p := filepath.Join(full, name)
			if target := f.external(p, e.Type()); target != "" {
				// Discover skips it: only where it leads counts.
				fmt.Fprintf(h, "%s\x00external %s\n", relName, target)
				continue
			}
			info, err := os.Stat(p)
			if err != nil {
				fmt.Fprintf(h, "%s\x00error %v\n", relName, err)
				continue
			}
			real, _ := filepath.EvalSymlinks(p)
			fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%s\n", relName, info.Mode(), info.Size(), info.ModTime().UnixNano(), real)
			if info.IsDir() && depth < maxWatchDepth {
				addFolder(p)
				walk(relName, depth+1)
			}
		}
	}
	walk("", 0)
	return hex.EncodeToString(h.Sum(nil)), folders
}

// maxWatchDepth bounds how deep Fingerprint and WatchDir go, so that a
// symlink loop ends (Discover reports loops; here they only must not hang).
const maxWatchDepth = 16

// WatchDir calls changed each time the hooks folder dir differs from the
// fingerprint last seen (from since at first: take it before loading the
// hooks, so that a change made during the load is not missed), once it has
// stayed unchanged for opts.Quiet. It learns of changes from inotify, for
// dir and every folder under it, and by comparing fingerprints every
// opts.Poll. changed runs on WatchDir's goroutine: the next change is
// looked at after it returns. WatchDir returns when ctx ends.
func WatchDir(ctx context.Context, dir, since string, opts WatchOptions, changed func()) {
	if opts.Quiet <= 0 {
		opts.Quiet = DefaultWatchQuiet
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultWatchPoll
	}
	warn := func(string) {}
	if opts.Warn != nil {
		// Folder names in these messages are the hooks folder's own.
		warn = func(msg string) { opts.Warn(limit.Printable(msg)) }
	}
	n := newNotifier(dir, opts.Folder, warn)
	defer n.close()
	last := since
	poll := time.NewTicker(opts.Poll)
	defer poll.Stop()
	for {
		polled := false
		select {
		case <-ctx.Done():
			return
		case <-n.events():
			// Wait until the folder is quiet: events keep coming while
			// files are written.
			if !n.quiet(ctx, opts.Quiet) {
				return
			}
		case err := <-n.errors():
			warn(fmt.Sprintf("hooks folder %s: inotify: %v", dir, err))
			continue
		case <-poll.C:
			polled = true
		}
		fp, folders := scan(dir, opts.Folder)
		// A change seen by polling may be halfway through: it counts once
		// the folder looks the same after the quiet period (inotify's
		// events have been waited out already).
		for polled && fp != last {
			if !loop.Sleep(ctx, opts.Quiet) {
				return
			}
			again, againFolders := scan(dir, opts.Folder)
			if again == fp {
				break
			}
			fp, folders = again, againFolders
		}
		if fp == last {
			continue
		}
		last = fp
		n.watch(folders)
		changed()
	}
}

// notifier is inotify on the hooks folder and every folder under it
// (their real paths: a ConfigMap volume's files live in a hidden folder
// that the swap replaces). Without inotify it sends nothing, and WatchDir
// polls.
type notifier struct {
	dir     string
	w       *fsnotify.Watcher
	warn    func(string)
	watched map[string]bool
}

func newNotifier(dir string, opts FolderOptions, warn func(string)) *notifier {
	n := &notifier{dir: dir, warn: warn, watched: map[string]bool{}}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		warn(fmt.Sprintf("hooks folder %s: inotify is not available (%v); looking for changes by polling only", dir, err))
		return n
	}
	n.w = w
	_, folders := scan(dir, opts)
	n.watch(folders)
	return n
}

// events returns the channel of file system events; nil (never ready)
// without inotify.
func (n *notifier) events() <-chan fsnotify.Event {
	if n.w == nil {
		return nil
	}
	return n.w.Events
}

// errors returns the channel of inotify's errors; nil without inotify.
func (n *notifier) errors() <-chan error {
	if n.w == nil {
		return nil
	}
	return n.w.Errors
}

// quiet drains events until none came for d; false when ctx ended.
func (n *notifier) quiet(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-n.w.Events:
			if !t.Stop() {
				<-t.C
			}
			t.Reset(d)
		case err := <-n.w.Errors:
			n.warn(fmt.Sprintf("hooks folder %s: inotify: %v", n.dir, err))
		case <-t.C:
			return true
		}
	}
}

// watch watches folders (real paths), and stops watching those no longer
// among them.
func (n *notifier) watch(folders []string) {
	if n.w == nil {
		return
	}
	want := map[string]bool{}
	for _, p := range folders {
		want[p] = true
		if n.watched[p] {
			continue
		}
		if err := n.w.Add(p); err != nil {
			n.warn(fmt.Sprintf("hooks folder %s: cannot watch %s with inotify (%v); its changes are seen by polling", n.dir, p, err))
			continue
		}
		n.watched[p] = true
	}
	for p := range n.watched {
		if !want[p] {
			_ = n.w.Remove(p) // gone with its folder, usually
			delete(n.watched, p)
		}
	}
}

func (n *notifier) close() {
	if n.w != nil {
		_ = n.w.Close()
	}
}
