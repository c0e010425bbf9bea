package watch

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/memlimit"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// An informer tells the start-up GC target how many objects its first list
// will hold, from the API server's remainingItemCount of a limit=1 list;
// with a selector, whose lists the server does not count, it says nothing
// and the list's size stays unknown until it ends.
func TestIntegrationInformerCountsObjects(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	ctx := context.Background()
	for i := range 7 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Labels: map[string]string{"n": fmt.Sprint(i)}}}
		if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clients, err := kube.NewClients(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	client := clients.Dynamic.Resource(configMaps).Namespace(ns)
	all, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	count := int64(len(all.Items)) // the 7 and the namespace's kube-root-ca.crt
	for _, tc := range []struct {
		name string
		key  informerKey
		want int64
	}{
		{"whole namespace", informerKey{namespace: ns}, count},
		{"label selector", informerKey{namespace: ns, labelSelector: "n=3"}, -1},
	} {
		i := &informer{key: tc.key, client: client, progress: memlimit.StartList()}
		i.countObjects(ctx)
		if got := i.progress.Expected(); got != tc.want {
			t.Errorf("%s: expected objects %d, want %d", tc.name, got, tc.want)
		}
		i.progress.Done()
	}
}
