package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hook-operator/hook-operator/internal/loop"
)

const (
	systemNamespace = "soak-system"
	soakLabel       = "hook-operator.dev/soak"
)

var deleteNow = metav1.DeleteOptions{}

// mirrorConfig is the mirror hook's configuration: sharded, both bindings
// in one group (each run sees the whole share), small filter results
// instead of full objects, a 15 s timeout (the hang fault), and the
// validating binding.
const mirrorConfig = `{
  "configVersion": "v1",
  "settings": {"sharded": true, "timeout": "15s"},
  "kubernetes": [
    {"name": "src", "kind": "ConfigMap", "group": "mirror", "keepFullObjectsInMemory": false,
     "labelSelector": {"matchLabels": {"soak": "src"}},
     "namespace": {"labelSelector": {"matchLabels": {"hook-operator.dev/soak": "run"}}},
     "jqFilter": "{ns: .metadata.namespace, name: .metadata.name, data: (.data // {})}"},
    {"name": "mirror", "kind": "ConfigMap", "group": "mirror", "keepFullObjectsInMemory": false,
     "labelSelector": {"matchLabels": {"soak": "mirror"}},
     "namespace": {"labelSelector": {"matchLabels": {"hook-operator.dev/soak": "run"}}},
     "jqFilter": "{ns: .metadata.namespace, name: .metadata.name, data: (.data // {})}"}
  ],
  "kubernetesValidating": [
    {"name": "soak.hook-operator.dev", "timeoutSeconds": 5, "failurePolicy": "Fail", "sideEffects": "None",
     "namespace": {"labelSelector": {"matchLabels": {"hook-operator.dev/soak": "run"}}},
     "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "operations": ["CREATE"]}]}
  ]
}
`

// nsName names the i-th namespace. The number comes first: the ring hashes
// a namespace's name with FNV-1a, and names that differ only in their last
// character (soak-0, soak-1, ...) hash to nearly the same point, so that
// one replica would own them all.
func nsName(i int) string { return fmt.Sprintf("s%d-soak", i) }

// prepareCluster makes the namespaces and empties them of what an earlier
// run left.
func (s *soak) prepareCluster(ctx context.Context) error {
	for i := -1; i < namespaces; i++ {
		name, labels := systemNamespace, map[string]string{}
		if i >= 0 {
			name, labels = nsName(i), map[string]string{soakLabel: "run"}
		}
		_, err := s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
		if i >= 0 {
			err := s.client.CoreV1().ConfigMaps(name).DeleteCollection(ctx, deleteNow, metav1.ListOptions{LabelSelector: "soak"})
			if err != nil {
				return fmt.Errorf("empty namespace %s: %w", name, err)
			}
		}
	}
	return nil
}

// churner creates, updates and deletes source ConfigMaps, about two
// changes a second, and pauses for convergence measurements.
type churner struct {
	client kubernetes.Interface
	gate   sync.RWMutex // held for writing while paused
	mu     sync.Mutex
	live   map[string]string // "ns/name" → the data's version
	next   int
	ops    map[string]int
	errors int
}

func newChurner(c kubernetes.Interface) *churner {
	return &churner{client: c, live: map[string]string{}, ops: map[string]int{}}
}

func (c *churner) seed(ctx context.Context, n int) error {
	for range n {
		if err := c.create(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (c *churner) loop(ctx context.Context) {
	for loop.Sleep(ctx, 500*time.Millisecond) {
		c.gate.RLock()
		c.mu.Lock()
		n := len(c.live)
		c.mu.Unlock()
		var err error
		switch p := random(10); {
		case n < maxSources/3 || (p < 3 && n < maxSources):
			err = c.create(ctx)
		case p < 8:
			err = c.update(ctx)
		default:
			err = c.delete(ctx)
		}
		c.gate.RUnlock()
		if err != nil && ctx.Err() == nil {
			c.mu.Lock()
			c.errors++ // the control-plane fault and the 429s make some fail; a retry is the next change
			c.mu.Unlock()
		}
	}
}

func (c *churner) pick() (ns, name string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.live {
		for i := range len(k) {
			if k[i] == '/' {
				return k[:i], k[i+1:], true
			}
		}
	}
	return "", "", false
}

func (c *churner) create(ctx context.Context) error {
	c.mu.Lock()
	c.next++
	name, ns := "s-"+strconv.Itoa(c.next), nsName(c.next%namespaces)
	c.mu.Unlock()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"soak": "src"}},
		Data: map[string]string{"v": "0", "payload": fmt.Sprintf("%0128d", c.next)}}
	if _, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	c.count(ns+"/"+name, "0", "create")
	return nil
}

func (c *churner) update(ctx context.Context) error {
	ns, name, ok := c.pick()
	if !ok {
		return nil
	}
	cm, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	v, _ := strconv.Atoi(cm.Data["v"])
	cm.Data["v"] = strconv.Itoa(v + 1)
	if _, err := c.client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return err
	}
	c.count(ns+"/"+name, cm.Data["v"], "update")
	return nil
}

func (c *churner) delete(ctx context.Context) error {
	ns, name, ok := c.pick()
	if !ok {
		return nil
	}
	err := c.client.CoreV1().ConfigMaps(ns).Delete(ctx, name, deleteNow)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	c.mu.Lock()
	delete(c.live, ns+"/"+name)
	c.ops["delete"]++
	c.mu.Unlock()
	return nil
}

func (c *churner) count(key, version, op string) {
	c.mu.Lock()
	c.live[key] = version
	c.ops[op]++
	c.mu.Unlock()
}

func (c *churner) pause()  { c.gate.Lock() }
func (c *churner) resume() { c.gate.Unlock() }

// totals returns the changes made, by kind, and the failed ones.
func (c *churner) totals() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.ops), c.errors
}

// converged compares the sources with the mirrors: it returns "" when
// every source has its mirror with equal data and no mirror lacks its
// source, else what differs (the first few).
func (s *soak) converged(ctx context.Context) (string, error) {
	var missing, differ, orphans []string
	for i := range namespaces {
		ns := nsName(i)
		list, err := s.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "soak"})
		if err != nil {
			return "", err
		}
		src, mir := map[string]map[string]string{}, map[string]map[string]string{}
		for _, cm := range list.Items {
			switch cm.Labels["soak"] {
			case "src":
				src[cm.Name] = cm.Data
			case "mirror":
				mir[cm.Name] = cm.Data
			}
		}
		for name, data := range src {
			m, ok := mir["m-"+name]
			switch {
			case !ok:
				missing = append(missing, ns+"/"+name)
			case !maps.Equal(m, data):
				differ = append(differ, ns+"/"+name)
			}
		}
		for name := range mir {
			if _, ok := src[name[min(2, len(name)):]]; !ok {
				orphans = append(orphans, ns+"/"+name)
			}
		}
	}
	if len(missing)+len(differ)+len(orphans) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d source(s) without a mirror %v, %d mirror(s) with other data %v, %d orphan mirror(s) %v",
		len(missing), first(missing), len(differ), first(differ), len(orphans), first(orphans)), nil
}

func first(s []string) []string { return s[:min(3, len(s))] }

// measureConvergence pauses churn and polls until the mirrors converge or
// convergeBound passes.
func (s *soak) measureConvergence(ctx context.Context, after faultKind) checkpoint {
	s.churn.pause()
	defer s.churn.resume()
	begin := time.Now()
	c := checkpoint{At: s.since(), After: after}
	last := "not compared yet"
	for time.Since(begin) < convergeBound && ctx.Err() == nil {
		diff, err := s.converged(ctx)
		if err == nil && diff == "" {
			c.OK, c.Converge = true, time.Since(begin)
			return c
		}
		if err != nil {
			last = "list: " + err.Error()
		} else {
			last = diff
		}
		loop.Sleep(ctx, 250*time.Millisecond)
	}
	c.Converge = -1
	c.Detail = fmt.Sprintf("not converged within %s: %s", convergeBound, last)
	return c
}

// leader returns the replica that holds the Lease.
func (s *soak) leader(ctx context.Context) (*replica, error) {
	lease, err := s.client.CoordinationV1().Leases(systemNamespace).Get(ctx, "soak", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if lease.Spec.HolderIdentity != nil {
		for _, r := range s.replicas {
			if r.id == *lease.Spec.HolderIdentity && r.pid() != 0 {
				return r, nil
			}
		}
	}
	return nil, errNoLeader
}
