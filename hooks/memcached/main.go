// Command memcached is the Memcached operator as a Go hook, written with
// the sdk package: for every Memcached (cache.example.com/v1) it runs a
// Deployment of spec.size memcached servers, owned by the Memcached, and
// reports the names of the Running servers in status.nodes.
//
// It is level-triggered: whatever fired, each run recomputes the desired
// state of every Memcached from the snapshots of its three bindings (which
// share a group, so every run sees all three) and declares it again. The
// operations it writes are idempotent: Apply writes nothing when the
// Deployment is as declared, and Status writes nothing when the status is
// unchanged, so a run caused by the hook's own writes settles at once.
//
// Build it next to this file: go build -o hooks/memcached/memcached ./hooks/memcached
// (make hooks does this for every Go hook).
package main

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/sdk"
)

const (
	apiVersion = "cache.example.com/v1"
	kind       = "Memcached"
	image      = "memcached:1.6-alpine"

	nameLabel      = "app.kubernetes.io/name"
	instanceLabel  = "app.kubernetes.io/instance"
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "hook-operator-memcached"

	// The bindings, and the group that gives every run all three snapshots.
	group              = "memcached"
	bindingMemcacheds  = "memcacheds"
	bindingDeployments = "deployments"
	bindingPods        = "pods"
)

// deploymentFilter keeps only fields the hook sets. The status and
// annotations that kube-controller-manager writes after each change are not
// in it, so they do not run the hook; a manual scale or a different image
// is, and is repaired.
const deploymentFilter = `{namespace: .metadata.namespace, name: .metadata.name, ` +
	`instance: .metadata.labels["app.kubernetes.io/instance"], replicas: .spec.replicas, ` +
	`image: .spec.template.spec.containers[0].image}`

// podFilter keeps what status.nodes is made of: a Pod runs the hook when it
// appears, goes away, changes phase or starts terminating.
const podFilter = `{namespace: .metadata.namespace, name: .metadata.name, ` +
	`instance: .metadata.labels["app.kubernetes.io/instance"], phase: .status.phase, ` +
	`terminating: (.metadata.deletionTimestamp != null)}`

var config = sdk.Config{
	Kubernetes: []sdk.KubernetesBinding{{
		// No jqFilter: any change of a Memcached runs the hook, except the
		// status writes of its own Status operations, which the runtime
		// drops for bindings without a filter.
		Name:       bindingMemcacheds,
		APIVersion: apiVersion,
		Kind:       kind,
		Group:      group,
	}, {
		Name:                    bindingDeployments,
		APIVersion:              "apps/v1",
		Kind:                    "Deployment",
		LabelSelector:           &metav1.LabelSelector{MatchLabels: map[string]string{managedByLabel: managedBy}},
		JQFilter:                deploymentFilter,
		KeepFullObjectsInMemory: sdk.Ptr(false),
		Group:                   group,
	}, {
		Name:       bindingPods,
		APIVersion: "v1",
		Kind:       "Pod",
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
			nameLabel:      "memcached",
			managedByLabel: managedBy,
		}},
		JQFilter:                podFilter,
		KeepFullObjectsInMemory: sdk.Ptr(false),
		Group:                   group,
	}},
	// What the operations below write, for `hook-operator rbac`: Apply is a
	// server-side apply patch; Status reads and updates the status
	// subresource; the owner reference's blockOwnerDeletion needs update on
	// the parent's finalizers where the API server checks it.
	Writes: []sdk.Write{
		{APIVersion: "apps/v1", Kind: "Deployment", Verbs: []string{"create", "patch"}},
		{APIVersion: apiVersion, Kind: kind, Subresource: "status", Verbs: []string{"get", "update"}},
		{APIVersion: apiVersion, Kind: kind, Subresource: "finalizers", Verbs: []string{"update"}},
	},
}

func main() { sdk.Run(config, reconcile) }

// Memcached is the custom resource.
type Memcached struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              MemcachedSpec `json:"spec"`
}

// MemcachedSpec is what the user asks for.
type MemcachedSpec struct {
	// Size is the number of memcached servers.
	Size int32 `json:"size"`
}

// deployment is a Deployment as the deployments binding's jqFilter sees it.
type deployment struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Instance  string `json:"instance"`
	Replicas  *int32 `json:"replicas"`
	Image     string `json:"image"`
}

// pod is a Pod as the pods binding's jqFilter sees it.
type pod struct {
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Instance    string `json:"instance"`
	Phase       string `json:"phase"`
	Terminating bool   `json:"terminating"`
}

// reconcile declares, for every Memcached, its Deployment and its status.
func reconcile(ctx *sdk.Context) error {
	// The snapshots are taken when the run starts, so every context of the
	// run carries the same ones; any context with snapshots will do.
	var c sdk.BindingContext
	for _, bc := range ctx.Contexts {
		if bc.Snapshots != nil {
			c = bc
		}
	}
	if c.Snapshots == nil {
		return nil
	}
	memcacheds, err := sdk.DecodeSnapshot[Memcached](c, bindingMemcacheds)
	if err != nil {
		return err
	}
	deployments, err := sdk.DecodeSnapshotFilterResults[deployment](c, bindingDeployments)
	if err != nil {
		return err
	}
	pods, err := sdk.DecodeSnapshotFilterResults[pod](c, bindingPods)
	if err != nil {
		return err
	}

	for _, m := range memcacheds {
		if m.DeletionTimestamp != nil {
			// Being deleted: the garbage collector removes the Deployment,
			// and applying it again would only fight that.
			continue
		}
		want := desiredDeployment(m)
		if why := drift(m, deployments); why != "" {
			ctx.Log.Info("updating the Deployment", "memcached", m.Namespace+"/"+m.Name, "reason", why)
		}
		ref := sdk.Ref{APIVersion: apiVersion, Kind: kind, Namespace: m.Namespace, Name: m.Name}
		nodes := runningPods(m, pods)
		ctx.Emit(
			// force: the hook is the authority for these fields; a manual
			// `kubectl scale` takes spec.replicas over, and is undone.
			sdk.Apply(want).WithParent(ref).WithForce(),
			sdk.Status(ref, map[string]any{"nodes": nodes}).WithObservedGeneration().WithIgnoreMissingObject(),
		)
	}
	return nil
}

// desiredDeployment is the Deployment a Memcached should have.
func desiredDeployment(m Memcached) *appsv1.Deployment {
	selector := map[string]string{nameLabel: "memcached", instanceLabel: m.Name}
	labels := map[string]string{nameLabel: "memcached", instanceLabel: m.Name, managedByLabel: managedBy}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: sdk.Ptr(m.Spec.Size),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:    "memcached",
						Image:   image,
						Command: []string{"memcached", "--memory-limit=64", "--conn-limit=1024", "--verbose"},
						Ports:   []corev1.ContainerPort{{Name: "memcached", ContainerPort: 11211}},
					}},
				},
			},
		},
	}
}

// drift says how the Deployment of m differs from what the hook applies, or
// "" when it does not (or only in fields the hook does not watch).
func drift(m Memcached, deployments []deployment) string {
	for _, d := range deployments {
		if d.Namespace != m.Namespace || d.Name != m.Name {
			continue
		}
		switch {
		case d.Replicas == nil || *d.Replicas != m.Spec.Size:
			return fmt.Sprintf("replicas %s, want %d", replicas(d.Replicas), m.Spec.Size)
		case d.Image != image:
			return fmt.Sprintf("image %q, want %q", d.Image, image)
		}
		return ""
	}
	return "missing"
}

func replicas(r *int32) string {
	if r == nil {
		return "unset"
	}
	return fmt.Sprint(*r)
}

// runningPods returns the sorted names of m's Pods that are Running and not
// terminating; never nil, so that status.nodes is written as [] (a null
// would delete it).
func runningPods(m Memcached, pods []pod) []string {
	nodes := []string{}
	for _, p := range pods {
		if p.Namespace == m.Namespace && p.Instance == m.Name && p.Phase == string(corev1.PodRunning) && !p.Terminating {
			nodes = append(nodes, p.Name)
		}
	}
	slices.Sort(nodes)
	return nodes
}
