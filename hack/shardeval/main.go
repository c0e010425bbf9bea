// Command shardeval measures Kubernetes' server-side sharded list and watch
// (KEP-5866, alpha in 1.36 behind the ShardedListAndWatch feature gate) on a
// cluster that has the gate on, for the sharding decision in
// docs/design/replicas.md, "Sharding across replicas":
//
//	HOOK_OPERATOR_CLUSTER=shardeval HOOK_OPERATOR_CLUSTER_FEATURE_GATES=ShardedListAndWatch=true hack/cluster/up.sh
//	go run ./hack/shardeval --kubeconfig ~/.cache/hook-operator/cluster-shardeval/kubeconfig
//
// It fills a namespace with ConfigMaps, lists them whole and in three
// shards of the uid hash space, checks that the shards are disjoint and
// cover the whole, that a 64-bit FNV-1a hash of the uid computed here puts
// every object in the shard the server did, and that a sharded watch
// delivers only its shard's events.
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"math/big"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of a cluster with the ShardedListAndWatch feature gate on")
	n := flag.Int("objects", 10000, "ConfigMaps to create")
	flag.Parse()
	if err := run(*kubeconfig, *n); err != nil {
		fmt.Fprintln(os.Stderr, "shardeval:", err)
		os.Exit(1)
	}
}

// bounds are the three shards' ranges of the 64-bit hash space, as hex
// strings the selector takes; the last end is 2^64.
var bounds = []string{"0x0000000000000000", "0x5555555555555555", "0xaaaaaaaaaaaaaaaa", "0x10000000000000000"}

func selector(i int) string {
	return fmt.Sprintf("shardRange(object.metadata.uid, '%s', '%s')", bounds[i], bounds[i+1])
}

func shardOf(uid string) int {
	h := fnv.New64a()
	h.Write([]byte(uid))
	v := new(big.Int).SetUint64(h.Sum64())
	for i := range 3 {
		lo, _ := new(big.Int).SetString(bounds[i][2:], 16)
		hi, _ := new(big.Int).SetString(bounds[i+1][2:], 16)
		if v.Cmp(lo) >= 0 && v.Cmp(hi) < 0 {
			return i
		}
	}
	return -1
}

func run(kubeconfig string, n int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	ns, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shardeval-"}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	defer c.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	cms := c.CoreV1().ConfigMaps(ns.Name)
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	fmt.Printf("created %d ConfigMaps in %s\n", n, time.Since(start).Round(time.Millisecond))

	for range 2 { // the second round is the one to read: caches warm
		start = time.Now()
		all, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		fmt.Printf("whole list: %d objects in %s\n", len(all.Items), time.Since(start).Round(time.Millisecond))
		seen := map[string]int{}
		for i := range 3 {
			start = time.Now()
			part, err := cms.List(ctx, metav1.ListOptions{ShardSelector: selector(i)})
			if err != nil {
				return fmt.Errorf("shard %d: %w", i, err)
			}
			mismatch := 0
			for _, o := range part.Items {
				seen[string(o.UID)]++
				if shardOf(string(o.UID)) != i {
					mismatch++
				}
			}
			info := "none"
			if part.ShardInfo != nil {
				info = fmt.Sprintf("%+v", *part.ShardInfo)
			}
			fmt.Printf("shard %d: %d objects in %s; %d placed elsewhere by our FNV-1a; shardInfo %s\n", i, len(part.Items), time.Since(start).Round(time.Millisecond), mismatch, info)
		}
		twice, missing := 0, 0
		for _, o := range all.Items {
			switch seen[string(o.UID)] {
			case 0:
				missing++
			case 1:
			default:
				twice++
			}
		}
		fmt.Printf("shards together: %d missing, %d in two shards (kube-root-ca.crt included)\n", missing, twice)
	}

	w, err := cms.Watch(ctx, metav1.ListOptions{ShardSelector: selector(0)})
	if err != nil {
		return fmt.Errorf("sharded watch: %w", err)
	}
	defer w.Stop()
	want := 0
	for i := range 60 {
		o, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if shardOf(string(o.UID)) == 0 {
			want++
		}
	}
	got, wrong := 0, 0
	timeout := time.After(5 * time.Second)
loop:
	for {
		select {
		case ev := <-w.ResultChan():
			o, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			got++
			if shardOf(string(o.UID)) != 0 {
				wrong++
			}
		case <-timeout:
			break loop
		}
	}
	fmt.Printf("sharded watch of shard 0: %d events for 60 creates (%d of them in shard 0 by our hash), %d outside it\n", got, want, wrong)
	return nil
}
