package kube

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is an API resource a kind resolved to.
type Resource struct {
	GVR        schema.GroupVersionResource
	GVK        schema.GroupVersionKind
	Namespaced bool
	// Status is set when the resource has a status subresource: writes of
	// the object itself then leave its status as it is.
	Status bool
}

// APIVersion returns the resource's group/version as written in objects.
func (r Resource) APIVersion() string { return r.GVK.GroupVersion().String() }

// String names the resource for messages, e.g. "deployments.v1.apps".
func (r Resource) String() string { return r.GVR.String() }

// ErrUnknownKind is wrapped by Resolve's error when discovery does not know
// the kind (yet: its CRD may not be installed).
var ErrUnknownKind = errors.New("unknown kind")

// Resolver resolves kinds through discovery, which it reads on first use and
// keeps. A kind it does not know makes it read discovery again (at most once
// per minRefresh) before giving up, so that kinds of CRDs installed while
// running become known.
type Resolver struct {
	// load reads discovery: the API server's for a live resolver, fixed
	// lists for a static one.
	load func() (*kinds, error)

	mu          sync.Mutex
	kinds       *kinds // nil until loaded, and after a refresh
	lastRefresh time.Time
	minRefresh  time.Duration
}

func newResolver(load func() (*kinds, error)) *Resolver {
	return &Resolver{load: load, minRefresh: time.Second}
}

// Resolve maps a kind as hooks write it (case-insensitive kind, plural,
// singular or short name: "Pod", "pods", "pod", "po") and an optional
// apiVersion ("apps/v1", "v1", or empty for the preferred version) to its
// resource. An apiVersion restricts the match to its group and version
// ("v1" is the core group). Kinds, plurals and singulars win over short
// names; among several matches the core group wins, then the group listed
// first by discovery.
func (r *Resolver) Resolve(apiVersion, kind string) (Resource, error) {
	res, err := r.resolve(apiVersion, kind)
	if err == nil || !errors.Is(err, ErrUnknownKind) {
		return res, err
	}
	if r.refresh() {
		return r.resolve(apiVersion, kind)
	}
	return res, err
}

// Refresh drops the discovery data read so far, so the next Resolve sees
// kinds added since.
func (r *Resolver) Refresh() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastRefresh = time.Now()
	r.kinds = nil
}

func (r *Resolver) refresh() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.lastRefresh) < r.minRefresh {
		return false
	}
	r.lastRefresh = time.Now()
	r.kinds = nil
	return true
}

// current returns the kinds, reading discovery if need be. Concurrent
// callers wait for one read rather than each start their own.
func (r *Resolver) current() (*kinds, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kinds == nil {
		k, err := r.load()
		if err != nil {
			return nil, err
		}
		r.kinds = k
	}
	return r.kinds, nil
}

func (r *Resolver) resolve(apiVersion, kind string) (Resource, error) {
	name := kind
	if apiVersion != "" {
		name = apiVersion + " " + kind
	}
	if strings.TrimSpace(kind) == "" {
		return Resource{}, errors.New("kind is empty")
	}
	var gv schema.GroupVersion
	if apiVersion != "" {
		var err error
		if gv, err = schema.ParseGroupVersion(apiVersion); err != nil {
			return Resource{}, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
		}
	}
	k, err := r.current()
	if err != nil {
		return Resource{}, fmt.Errorf("%s: %w", name, err)
	}
	res, err := k.lookup(gv, apiVersion == "", kind)
	if err != nil {
		return Resource{}, fmt.Errorf("%s: %w", name, err)
	}
	return res, nil
}
