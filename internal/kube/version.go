package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/version"
)

// OldestTested is the oldest Kubernetes minor release the project tests on
// (make test-matrix; docs/compatibility.md). start warns below it.
var OldestTested = Version{Major: 1, Minor: 31}

// Version is an API server's release, as /version reports it.
type Version struct {
	Major, Minor int
	// Git is the full version, such as v1.31.13 or v1.33.5-eks-1a2b3c; empty
	// for a version written as a constant.
	Git string
}

func (v Version) String() string {
	if v.Git != "" {
		return v.Git
	}
	return fmt.Sprintf("v%d.%d", v.Major, v.Minor)
}

// Before reports whether v is an older minor release than o.
func (v Version) Before(o Version) bool {
	return v.Major < o.Major || v.Major == o.Major && v.Minor < o.Minor
}

// leadingDigits is the number at the start of a major or minor field:
// providers write minors such as "31+".
var leadingDigits = regexp.MustCompile(`^[0-9]+`)

// gitRelease is the release at the start of a gitVersion: v1.31 of v1.31.13.
var gitRelease = regexp.MustCompile(`^v([0-9]+)\.([0-9]+)`)

// ParseVersion reads what /version answers. Major and minor come from
// their fields, and from gitVersion (v1.31.13) where a field is empty or
// not a number.
func ParseVersion(info version.Info) (Version, error) {
	v := Version{Git: info.GitVersion}
	major, errMajor := strconv.Atoi(leadingDigits.FindString(info.Major))
	minor, errMinor := strconv.Atoi(leadingDigits.FindString(info.Minor))
	if errMajor != nil || errMinor != nil {
		m := gitRelease.FindStringSubmatch(info.GitVersion)
		if m == nil {
			return Version{}, fmt.Errorf("the API server's /version names no release: major %q, minor %q, gitVersion %q", info.Major, info.Minor, info.GitVersion)
		}
		major, _ = strconv.Atoi(m[1])
		minor, _ = strconv.Atoi(m[2])
	}
	v.Major, v.Minor = major, minor
	return v, nil
}

// ParseRelease reads a release written as gitVersion is, such as v1.31.13.
func ParseRelease(s string) (Version, error) {
	return ParseVersion(version.Info{GitVersion: s})
}

// ServerVersion asks the API server for its release, once: the answer is
// kept, and later calls return it without a request. A failed request is
// not kept.
func (c *Clients) ServerVersion(ctx context.Context) (Version, error) {
	if v := c.version.Load(); v != nil {
		return *v, nil
	}
	if c.Unversioned == nil {
		return Version{}, fmt.Errorf("no client for the API server's /version")
	}
	body, err := c.Unversioned.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return Version{}, fmt.Errorf("ask the API server for its version: %w", err)
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return Version{}, fmt.Errorf("the API server's /version: %w", err)
	}
	v, err := ParseVersion(info)
	if err != nil {
		return Version{}, err
	}
	c.version.Store(&v)
	return v, nil
}

// Preconnect opens, side by side, the two connections start-up would
// otherwise open one after the other: the shared one, with the question
// for the API server's release (ServerVersion), and a first watch
// connection (Watches), whose request is answered and whose connection is
// then left idle for the first watch to take instead of dialling. Each
// costs a TCP connection and a TLS handshake, a few milliseconds. The
// caller goes on meanwhile (start loads its hooks); the returned function
// waits for both and returns the release. A watch connection no watch
// takes closes after the transport's idle timeout (90 s).
func (c *Clients) Preconnect(ctx context.Context) func() (Version, error) {
	var (
		wg  sync.WaitGroup
		v   Version
		err error
	)
	wg.Go(func() { v, err = c.ServerVersion(ctx) })
	if c.Watches != nil {
		// Its answer does not matter: what fails it fails the first watch
		// too, which reports it.
		wg.Go(func() { _ = c.Watches.Get().AbsPath("/version").Do(ctx).Error() })
	}
	return sync.OnceValues(func() (Version, error) {
		wg.Wait()
		return v, err
	})
}
