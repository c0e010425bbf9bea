package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// aggregatedAccept asks for aggregated discovery (apidiscovery.k8s.io/v2,
// served since Kubernetes 1.30): all groups, versions and resources of /api
// or /apis in one response. Older servers answer with the legacy JSON
// document, which names the group versions to read one by one.
const aggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"

// discoveryTimeout bounds one reading of discovery, so that a hung API
// server makes Resolve fail (and the caller retry) instead of wait forever.
const discoveryTimeout = time.Minute

// discoverKinds reads the API server's resources through c (an unversioned
// client: see Clients.Unversioned). It does not use client-go's discovery
// client, which links every built-in API group into the binary (see
// docs/design/api-server.md, "Discovery, kind resolution and Events").
func discoverKinds(c rest.Interface) (*kinds, error) {
	ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
	defer cancel()
	lists, unread, err := discover(ctx, c)
	if err != nil {
		return nil, err
	}
	return newKinds(lists, unread), nil
}

// discover returns the resource lists the API server serves, group by group
// in the server's order, each group's preferred version first (the order
// newKinds ranks by), and the group versions it could not read, with why.
// Those do not fail discovery, as with kubectl: an aggregated API server
// that is down must not hide the kinds of every other group.
func discover(ctx context.Context, c rest.Interface) (lists []*metav1.APIResourceList, unread []string, err error) {
	for _, path := range []string{"/api", "/apis"} {
		body, contentType, err := get(ctx, c, path, aggregatedAccept)
		if err != nil {
			return nil, nil, fmt.Errorf("read API discovery at %s: %w", path, err)
		}
		var l []*metav1.APIResourceList
		var u []string
		if isAggregated(contentType) {
			l, u, err = parseAggregated(body)
		} else {
			l, u, err = discoverLegacy(ctx, c, path, body)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read API discovery at %s: %w", path, err)
		}
		lists = append(lists, l...)
		unread = append(unread, u...)
	}
	return lists, unread, nil
}

// isAggregated reports whether a response's Content-Type is the aggregated
// discovery document aggregatedAccept asks for.
func isAggregated(contentType string) bool {
	mediaType, params, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == "application/json" &&
		params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList"
}

// aggregatedDiscovery is an apidiscovery.k8s.io/v2 APIGroupDiscoveryList,
// reduced to the fields kind resolution reads. (k8s.io/api/apidiscovery/v2
// has the full types; these few fields do not need its generated code.)
type aggregatedDiscovery struct {
	Kind  string `json:"kind"`
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		// Versions are in preference order, the preferred one first.
		Versions []struct {
			Version string `json:"version"`
			// Freshness is "Stale" when the API server could not read the
			// version from its (aggregated) API server.
			Freshness string `json:"freshness"`
			Resources []struct {
				Resource     string `json:"resource"`
				ResponseKind *struct {
					Kind string `json:"kind"`
				} `json:"responseKind"`
				Scope            string   `json:"scope"`
				SingularResource string   `json:"singularResource"`
				ShortNames       []string `json:"shortNames"`
				Subresources     []struct {
					Subresource string `json:"subresource"`
				} `json:"subresources"`
			} `json:"resources"`
		} `json:"versions"`
	} `json:"items"`
}

// parseAggregated turns an aggregated discovery document into resource
// lists, in its order. Stale versions are unread; resources without a kind
// are left out, as client-go does. Of the subresources only status is
// listed ("pods/status", as the legacy lists have it): writers need to know
// which kinds have one.
func parseAggregated(body []byte) (lists []*metav1.APIResourceList, unread []string, err error) {
	var d aggregatedDiscovery
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, nil, fmt.Errorf("aggregated discovery document: %w", err)
	}
	if d.Kind != "APIGroupDiscoveryList" {
		return nil, nil, fmt.Errorf("aggregated discovery document has kind %q, want APIGroupDiscoveryList", d.Kind)
	}
	for _, g := range d.Items {
		for _, v := range g.Versions {
			gv := v.Version
			if g.Metadata.Name != "" {
				gv = g.Metadata.Name + "/" + v.Version
			}
			if v.Freshness == "Stale" {
				unread = append(unread, gv+" (stale: its API server did not answer discovery)")
				continue
			}
			l := &metav1.APIResourceList{GroupVersion: gv}
			for _, r := range v.Resources {
				if r.ResponseKind == nil || r.ResponseKind.Kind == "" {
					continue
				}
				l.APIResources = append(l.APIResources, metav1.APIResource{
					Name:         r.Resource,
					SingularName: r.SingularResource,
					Namespaced:   r.Scope == "Namespaced",
					Kind:         r.ResponseKind.Kind,
					ShortNames:   r.ShortNames,
				})
				// As the legacy lists name them: "pods/status".
				for _, sub := range r.Subresources {
					if sub.Subresource == "status" {
						l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.Resource + "/status", Kind: r.ResponseKind.Kind})
					}
				}
			}
			lists = append(lists, l)
		}
	}
	return lists, unread, nil
}

// discoverLegacy reads the resource lists of the group versions that body,
// the legacy document at path, names: /api's APIVersions or /apis'
// APIGroupList. It reads them in parallel, as client-go does; one request
// per group version.
func discoverLegacy(ctx context.Context, c rest.Interface, path string, body []byte) (lists []*metav1.APIResourceList, unread []string, err error) {
	gvs, err := legacyGroupVersions(path, body)
	if err != nil {
		return nil, nil, err
	}
	lists = make([]*metav1.APIResourceList, len(gvs))
	errs := make([]error, len(gvs))
	var wg sync.WaitGroup
	for i, gv := range gvs {
		wg.Go(func() {
			lists[i], errs[i] = readResourceList(ctx, c, path+"/"+gv)
		})
	}
	wg.Wait()
	var read []*metav1.APIResourceList
	for i, l := range lists {
		if errs[i] != nil {
			unread = append(unread, fmt.Sprintf("%s (%v)", gvs[i], errs[i]))
			continue
		}
		l.GroupVersion = gvs[i]
		read = append(read, l)
	}
	return read, unread, nil
}

// legacyGroupVersions returns the group versions a legacy discovery
// document lists: each group's preferred version first, then its others.
func legacyGroupVersions(path string, body []byte) ([]string, error) {
	if path == "/api" {
		var v metav1.APIVersions
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("APIVersions document: %w", err)
		}
		return v.Versions, nil
	}
	var groups metav1.APIGroupList
	if err := json.Unmarshal(body, &groups); err != nil {
		return nil, fmt.Errorf("APIGroupList document: %w", err)
	}
	var gvs []string
	for _, g := range groups.Groups {
		if p := g.PreferredVersion.GroupVersion; p != "" {
			gvs = append(gvs, p)
		}
		for _, v := range g.Versions {
			if v.GroupVersion != g.PreferredVersion.GroupVersion {
				gvs = append(gvs, v.GroupVersion)
			}
		}
	}
	return gvs, nil
}

func readResourceList(ctx context.Context, c rest.Interface, path string) (*metav1.APIResourceList, error) {
	body, _, err := get(ctx, c, path, "application/json")
	if err != nil {
		return nil, err
	}
	var l metav1.APIResourceList
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("APIResourceList document: %w", err)
	}
	return &l, nil
}

// get returns the body and Content-Type of the response to GET path, or
// its error: the server's Status message when it sent one.
func get(ctx context.Context, c rest.Interface, path, accept string) ([]byte, string, error) {
	var contentType string
	result := c.Get().AbsPath(path).SetHeader("Accept", accept).Do(ctx).ContentType(&contentType)
	if err := result.Error(); err != nil {
		return nil, "", err
	}
	body, _ := result.Raw()
	return body, contentType, nil
}
