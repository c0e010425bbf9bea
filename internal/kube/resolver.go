package kube

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
)

// Resource is an API resource a kind resolved to.
type Resource struct {
	GVR        schema.GroupVersionResource
	GVK        schema.GroupVersionKind
	Namespaced bool
}

// APIVersion returns the resource's group/version as written in objects.
func (r Resource) APIVersion() string { return r.GVK.GroupVersion().String() }

// String names the resource for messages, e.g. "deployments.v1.apps".
func (r Resource) String() string { return r.GVR.String() }

// ErrUnknownKind is wrapped by Resolve's error when discovery does not know
// the kind (yet: its CRD may not be installed).
var ErrUnknownKind = errors.New("unknown kind")

// Resolver resolves kinds through cached discovery. A kind it does not know
// makes it refresh the cache (at most once per minRefresh) before giving up,
// so that kinds of CRDs installed while running become known.
type Resolver struct {
	cached discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	expand meta.RESTMapper

	mu          sync.Mutex
	lastRefresh time.Time
	minRefresh  time.Duration
}

// NewResolver returns a resolver over a cached discovery client.
func NewResolver(cached discovery.CachedDiscoveryInterface) *Resolver {
	m := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	return &Resolver{
		cached:     cached,
		mapper:     m,
		expand:     restmapper.NewShortcutExpander(m, cached, func(string) {}),
		minRefresh: time.Second,
	}
}

// Resolve maps a kind as hooks write it (case-insensitive kind, plural or
// short name: "Pod", "pods", "po") and an optional apiVersion ("apps/v1",
// "v1", or empty for the preferred version) to its resource.
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

// Refresh drops the cached discovery data, so the next Resolve sees kinds
// added since.
func (r *Resolver) Refresh() {
	r.mu.Lock()
	r.lastRefresh = time.Now()
	r.mu.Unlock()
	r.mapper.Reset()
}

func (r *Resolver) refresh() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.lastRefresh) < r.minRefresh {
		return false
	}
	r.lastRefresh = time.Now()
	r.mapper.Reset()
	return true
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
	partial := schema.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: strings.ToLower(kind)}
	gvr, err := r.expand.ResourceFor(partial)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return Resource{}, fmt.Errorf("%s: %w (no such kind, plural or short name is served)", name, ErrUnknownKind)
		}
		return Resource{}, fmt.Errorf("%s: %w", name, err)
	}
	gvk, err := r.expand.KindFor(gvr)
	if err != nil {
		return Resource{}, fmt.Errorf("%s: %w", name, err)
	}
	mapping, err := r.expand.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return Resource{}, fmt.Errorf("%s: %w", name, err)
	}
	return Resource{
		GVR:        gvr,
		GVK:        gvk,
		Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace,
	}, nil
}
