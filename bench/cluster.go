package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hook-operator/hook-operator/internal/localcluster"
	"github.com/hook-operator/hook-operator/internal/loop"
)

// benchLabel marks the namespaces the harness creates, so that a run can
// find what an interrupted run left behind.
const benchLabel = "hook-operator.dev/bench"

// cluster is the cluster the benchmark runs on, and the namespaces it made.
type cluster struct {
	kubeconfig string
	client     kubernetes.Interface
	// watcher has a connection of its own, so that a floor watch does not
	// share one with the creates it watches.
	watcher kubernetes.Interface

	mu         sync.Mutex
	namespaces []string
}

// connect returns a client for kubeconfig, or for the local cluster (started
// by hack/cluster/up.sh if needed) when kubeconfig is "".
func connect(ctx context.Context, root, kubeconfig string) (*cluster, error) {
	if kubeconfig == "" {
		var err error
		if kubeconfig, err = localcluster.Up(ctx, root); err != nil {
			return nil, err
		}
	}
	// The harness is the load: its own client must not be what limits the
	// rate of creates.
	cfg, err := localcluster.Config(kubeconfig, 5000, 10000)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// A Dial of its own keeps client-go from sharing the transport (and its
	// HTTP/2 connection) of the client above.
	wcfg := rest.CopyConfig(cfg)
	wcfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	watcher, err := kubernetes.NewForConfig(wcfg)
	if err != nil {
		return nil, err
	}
	return &cluster{kubeconfig: kubeconfig, client: client, watcher: watcher}, nil
}

// Namespace creates a fresh namespace for scenario, deleted by Cleanup, and
// waits for its kube-root-ca.crt ConfigMap, so that the controller that
// adds it does not add an event to a measurement.
func (c *cluster) Namespace(ctx context.Context, scenario string) (string, error) {
	ns, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "bench-" + scenario + "-",
		Labels:       map[string]string{benchLabel: scenario},
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create a namespace for %s: %w", scenario, err)
	}
	c.mu.Lock()
	c.namespaces = append(c.namespaces, ns.Name)
	c.mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := c.client.CoreV1().ConfigMaps(ns.Name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err == nil {
			return ns.Name, nil
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			return "", fmt.Errorf("namespace %s: no kube-root-ca.crt ConfigMap (is kube-controller-manager running?): %w", ns.Name, err)
		}
		if !loop.Sleep(ctx, 20*time.Millisecond) {
			return "", ctx.Err()
		}
	}
}

// KeptNamespace returns namespace name, created when missing, for
// --scale-namespace: it has no bench label, so that neither Cleanup nor
// WaitLeftovers deletes it, and the ConfigMaps made in it serve later runs.
func (c *cluster) KeptNamespace(ctx context.Context, name string) (string, error) {
	_, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("--scale-namespace %s: %w", name, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := c.client.CoreV1().ConfigMaps(name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err == nil {
			return name, nil
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			return "", fmt.Errorf("--scale-namespace %s: no kube-root-ca.crt ConfigMap (is kube-controller-manager running?): %w", name, err)
		}
		if !loop.Sleep(ctx, 20*time.Millisecond) {
			return "", ctx.Err()
		}
	}
}

// Present returns the names of the ConfigMaps of ns that start with
// prefix, listed in pages.
func (c *cluster) Present(ctx context.Context, ns, prefix string) (map[string]bool, error) {
	have := map[string]bool{}
	opts := metav1.ListOptions{Limit: 10000}
	for {
		l, err := c.client.CoreV1().ConfigMaps(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list the configmaps of %s: %w", ns, err)
		}
		for _, cm := range l.Items {
			if strings.HasPrefix(cm.Name, prefix) {
				have[cm.Name] = true
			}
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return have, nil
		}
	}
}

// Cleanup starts deleting the namespaces of this run. Deletion goes on in
// the cluster after the harness ends; the next run waits for it.
func (c *cluster) Cleanup() {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ns := range c.namespaces {
		err := c.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(os.Stderr, "bench: delete namespace %s: %v\n", ns, err)
		}
	}
	c.namespaces = nil
}

// WaitLeftovers deletes the namespaces earlier runs left, and waits until
// they are gone: the namespace controller deleting thousands of objects
// would distort every measurement.
func (c *cluster) WaitLeftovers(ctx context.Context) error {
	list := func() ([]corev1.Namespace, error) {
		l, err := c.client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: benchLabel})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	items, err := list()
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return nil
	}
	for _, ns := range items {
		if ns.DeletionTimestamp == nil {
			_ = c.client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		}
	}
	logf("waiting for %d namespace(s) of an earlier run to be deleted", len(items))
	deadline := time.Now().Add(15 * time.Minute)
	for len(items) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("namespaces labelled %s are still being deleted after 15 minutes", benchLabel)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
		if items, err = list(); err != nil {
			return err
		}
	}
	return nil
}

// configMapName is the name of the i-th ConfigMap of a set.
func configMapName(prefix string, i int) string { return fmt.Sprintf("%s%06d", prefix, i) }

// names returns the names prefix000000 ... of n ConfigMaps from first.
func names(prefix string, first, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = configMapName(prefix, first+i)
	}
	return out
}

// newConfigMap is the small object every scenario creates. Its data holds
// its name, so that a binding without full objects can still name it.
func newConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"name": name, "value": "small"},
	}
}

// CreateOne creates one ConfigMap and returns when the create call returned.
func (c *cluster) CreateOne(ctx context.Context, ns, name string) (time.Time, error) {
	_, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, newConfigMap(name), metav1.CreateOptions{})
	return time.Now(), err
}

// Create creates the named ConfigMaps in ns with workers goroutines, as
// fast as the API server takes them, or perSecond a second when above
// zero, and returns when each create call returned (in the order of names).
func (c *cluster) Create(ctx context.Context, ns string, names []string, workers, perSecond int) ([]time.Time, error) {
	var pace *rate.Limiter
	if perSecond > 0 {
		pace = rate.NewLimiter(rate.Limit(perSecond), 1)
	}
	returned := make([]time.Time, len(names))
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				t, err := c.CreateOne(ctx, ns, names[i])
				if err != nil {
					errs <- fmt.Errorf("create configmap %s/%s: %w", ns, names[i], err)
					return
				}
				returned[i] = t
			}
		})
	}
	var err error
feed:
	for i := range names {
		if pace != nil {
			if err = pace.Wait(ctx); err != nil {
				break feed
			}
		}
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil && len(errs) > 0 {
		err = <-errs
	}
	return returned, err
}

// Fill creates ConfigMaps prefix<from> ... prefix<to-1> in ns, printing
// progress for large sets.
func (c *cluster) Fill(ctx context.Context, ns, prefix string, from, to int) error {
	const chunk = 10000
	start := time.Now()
	for i := from; i < to; i += chunk {
		n := min(chunk, to-i)
		if _, err := c.Create(ctx, ns, names(prefix, i, n), 16, 0); err != nil {
			return err
		}
		if to-from > chunk {
			logf("  %s: %d of %d ConfigMaps (%.0f/s)", ns, i+n-from, to-from, float64(i+n-from)/time.Since(start).Seconds())
		}
	}
	return nil
}

// StreamingList measures the floor of a Synchronization: one bare streaming
// list of the ConfigMaps of ns, as an informer makes it (a watch with
// sendInitialEvents, ended by the bookmark that marks the end of the
// initial events), in JSON as the operator asks for it, read line by line
// without decoding the objects. It is what the API server itself costs; it
// returns the time from the request to that bookmark and how many objects
// came.
func (c *cluster) StreamingList(ctx context.Context, ns string) (time.Duration, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	stream, err := c.client.CoreV1().RESTClient().Get().
		Namespace(ns).Resource("configmaps").
		Param("watch", "true").
		Param("sendInitialEvents", "true").
		Param("resourceVersionMatch", string(metav1.ResourceVersionMatchNotOlderThan)).
		Param("allowWatchBookmarks", "true").
		SetHeader("Accept", "application/json").
		Stream(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("streaming list of configmaps in %s: %w", ns, err)
	}
	defer stream.Close()
	sc := bufio.NewScanner(stream)
	sc.Buffer(make([]byte, 256<<10), 16<<20)
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte(`{"type":"ADDED"`)):
			n++
		case bytes.HasPrefix(line, []byte(`{"type":"BOOKMARK"`)) && bytes.Contains(line, []byte(`"k8s.io/initial-events-end":"true"`)):
			return time.Since(start), n, nil
		case bytes.HasPrefix(line, []byte(`{"type":"ERROR"`)):
			return 0, n, fmt.Errorf("streaming list of configmaps in %s: %s", ns, line)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, n, fmt.Errorf("streaming list of configmaps in %s: %w", ns, err)
	}
	return 0, n, fmt.Errorf("streaming list of configmaps in %s: the stream ended after %d objects without the bookmark that ends the initial events (does the API server serve watch lists?)", ns, n)
}

// DryRunCreate sends one create of a small ConfigMap with dryRun=All: it
// goes through admission and changes nothing.
func (c *cluster) DryRunCreate(ctx context.Context, ns, name string) error {
	_, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, newConfigMap(name), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// floorWatch is a bare watch of the ConfigMaps of a namespace: the time
// each object's first event reached the harness, read line by line without
// decoding. It is the floor of a latency: what the API server takes to
// deliver an event, which no operator can go under.
type floorWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	seen   map[string]time.Time // valid after Stop
}

// WatchFloor opens a floor watch on ns and returns once the API server has
// answered the request, so that every later change reaches it.
func (c *cluster) WatchFloor(ctx context.Context, ns string) (*floorWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	stream, err := c.watcher.CoreV1().RESTClient().Get().
		Namespace(ns).Resource("configmaps").
		Param("watch", "true").
		SetHeader("Accept", "application/json").
		Stream(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch of configmaps in %s: %w", ns, err)
	}
	w := &floorWatch{cancel: cancel, done: make(chan struct{}), seen: map[string]time.Time{}}
	go func() {
		defer close(w.done)
		defer stream.Close()
		sc := bufio.NewScanner(stream)
		sc.Buffer(make([]byte, 256<<10), 16<<20)
		for sc.Scan() {
			at := time.Now()
			line := sc.Bytes()
			if !bytes.HasPrefix(line, []byte(`{"type":"ADDED"`)) {
				continue
			}
			if name := firstName(line); name != "" {
				if _, ok := w.seen[name]; !ok {
					w.seen[name] = at
				}
			}
		}
		if err := sc.Err(); err != nil && ctx.Err() == nil {
			w.err = fmt.Errorf("watch of configmaps in %s: %w", ns, err)
		}
	}()
	return w, nil
}

// Stop ends the watch and returns when each object's first event came.
func (w *floorWatch) Stop() (map[string]time.Time, error) {
	w.cancel()
	<-w.done
	return w.seen, w.err
}

// firstName is the value of the first "name" key of a watch event's line:
// the object's metadata.name, which the API server writes first in
// metadata.
func firstName(line []byte) string {
	key := []byte(`"name":"`)
	i := bytes.Index(line, key)
	if i < 0 {
		return ""
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}
