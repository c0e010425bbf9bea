package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/localcerts"
	"github.com/hook-operator/hook-operator/internal/localcluster"
	"github.com/hook-operator/hook-operator/internal/loop"
)

// admissionWorkers is how many requests the throughput part of the
// admission scenario keeps in flight: twice the operator's default
// --webhook-max-concurrent, so that the cap is what limits the rate.
const admissionWorkers = 32

// runAdmission measures what an admission webhook served by a hook costs
// the API server's clients, with hook-operator only (shell-operator
// registers webhooks by Service alone, which the local API server, outside
// any cluster network, cannot reach). The operator serves a validating
// binding on ConfigMap creates in one namespace, registered by URL. The
// harness sends AdmissionRequests dry-run creates one at a time, each
// followed by one to a namespace the webhook does not match, and reports
// the latency the webhook adds (p50 and p99 of the differences of the two
// distributions). Then, from 32 goroutines: 2×AdmissionRequests creates
// where the webhook does not match (the API server's own rate on this
// machine, which bounds the next), as many where it does (the requests
// per second answered at the operator's concurrency cap, through the API
// server), and 4×AdmissionRequests AdmissionReviews sent straight to the
// operator's webhook (the rate the operator and its hook answer at).
// Dry-run creates change nothing and still go through admission (the
// binding's sideEffects is None).
func runAdmission(ctx context.Context, b *bench) error {
	ns, err := b.cluster.Namespace(ctx, "admission")
	if err != nil {
		return err
	}
	free, err := b.cluster.Namespace(ctx, "admission-free")
	if err != nil {
		return err
	}
	certs := filepath.Join(b.tmp, "admission-certs")
	if err := localcerts.Write(certs, "hook-operator bench CA"); err != nil {
		return err
	}
	configName := "hook-operator-bench-" + ns
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.cluster.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, configName, metav1.DeleteOptions{})
	}()
	s := subject{b.impls[0], ""}
	for rep := b.firstRepeat(); rep <= b.cfg.Repeat; rep++ {
		rates, direct := map[string]float64{}, map[string]float64{} // by hook kind
		index := map[string]int{}                                   // in b.runs
		for _, kind := range b.cfg.Hooks {
			s.hook = kind
			r := newRun("admission", "", s, rep, b.cfg.AdmissionRequests)
			op, err := measureAdmission(ctx, b, s, ns, free, certs, configName, &r, b.profile("admission", "", s, rep))
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.record(r, op, err)
			if err == nil {
				rates[kind], direct[kind], index[kind] = r.Metrics[mAdmRate], r.Metrics[mAdmDirectRate], len(b.runs)-1
			}
		}
		for _, kind := range b.cfg.Hooks {
			if one := rates[oneShot(kind)]; residentHook(kind) && rates[kind] > 0 && one > 0 {
				b.runs[index[kind]].Metrics[mAdmRateGain] = rates[kind] / one
				logf("  admission: the %s hook answers %.1f times the requests per second of the %s hook", kind, rates[kind]/one, oneShot(kind))
			}
			if one := direct[oneShot(kind)]; residentHook(kind) && direct[kind] > 0 && one > 0 {
				b.runs[index[kind]].Metrics[mAdmDirectGain] = direct[kind] / one
				logf("  admission: sent directly, the %s hook answers %.1f times the requests per second of the %s hook", kind, direct[kind]/one, oneShot(kind))
			}
		}
	}
	return nil
}

func measureAdmission(ctx context.Context, b *bench, s subject, ns, free, certs, configName string, r *Run, prof *profiling) (*operator, error) {
	port, err := localcluster.FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := newRunDir(b)
	if err != nil {
		return nil, err
	}
	op, err := startOperator(launch{impl: s.impl, kubeconfig: b.cluster.kubeconfig, hooksDir: b.hooksDirs[s.hook],
		dir: dir, config: admissionConfig(ns), tmpDir: b.cfg.HookTmpDir, pprof: prof != nil, resident: residentHook(s.hook),
		extra: []string{"--webhook-listen-address", "127.0.0.1:" + port, "--webhook-url", "https://127.0.0.1:" + port,
			"--webhook-cert", filepath.Join(certs, "tls.crt"), "--webhook-key", filepath.Join(certs, "tls.key"),
			"--webhook-ca", filepath.Join(certs, "ca.crt"), "--webhook-configuration-name", configName}})
	if err != nil {
		return nil, err
	}
	defer op.Stop()
	// The webhook is in place once the probe is denied.
	deadline := time.Now().Add(time.Minute)
	for {
		err := b.cluster.DryRunCreate(ctx, ns, "bench-probe")
		if err != nil && strings.Contains(err.Error(), "probe") {
			break
		}
		if time.Now().After(deadline) {
			return op, fmt.Errorf("the webhook did not deny the probe within a minute (last: %v); operator log:\n%s", err, op.Log(20))
		}
		if !loop.Sleep(ctx, 100*time.Millisecond) {
			return op, ctx.Err()
		}
	}

	wait := prof.cpu(ctx, op, 10*time.Second)
	defer wait()
	n := b.cfg.AdmissionRequests
	with, without := make([]float64, 0, n), make([]float64, 0, n)
	for range n {
		for _, target := range []struct {
			ns  string
			out *[]float64
		}{{free, &without}, {ns, &with}} {
			start := time.Now()
			if err := b.cluster.DryRunCreate(ctx, target.ns, "bench-a"); err != nil {
				return op, fmt.Errorf("a dry-run create in %s: %w", target.ns, err)
			}
			*target.out = append(*target.out, float64(time.Since(start).Microseconds())/1000)
		}
	}
	r.Metrics[mAdmBaseP50] = percentile(without, 50)
	r.Metrics[mAdmAddedP50] = percentile(with, 50) - percentile(without, 50)
	r.Metrics[mAdmAddedP99] = percentile(with, 99) - percentile(without, 99)

	// The API server's own rate, without the webhook, bounds the rate
	// with it.
	rate, err := concurrently(2*n, func() error { return b.cluster.DryRunCreate(ctx, free, "bench-a") })
	if err != nil {
		return op, fmt.Errorf("concurrent dry-run creates in %s: %w", free, err)
	}
	r.Metrics[mAdmFreeRate] = rate
	if r.Metrics[mAdmRate], err = concurrently(2*n, func() error { return b.cluster.DryRunCreate(ctx, ns, "bench-a") }); err != nil {
		return op, fmt.Errorf("concurrent dry-run creates in %s: %w", ns, err)
	}
	send, err := directReviews(ctx, b, certs, configName, ns)
	if err != nil {
		return op, err
	}
	if r.Metrics[mAdmDirectRate], err = concurrently(4*n, send); err != nil {
		return op, fmt.Errorf("AdmissionReviews sent to the operator: %w", err)
	}
	return op, nil
}

// concurrently calls f total times from admissionWorkers goroutines and
// returns the calls per second; the first error stops it.
func concurrently(total int, f func() error) (float64, error) {
	var done atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan struct{}, total)
	for range total {
		next <- struct{}{}
	}
	close(next)
	start := time.Now()
	for range admissionWorkers {
		wg.Go(func() {
			for range next {
				if err := f(); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(done.Load()) / time.Since(start).Seconds(), nil
}

// directReviews returns a function that sends one AdmissionReview of a
// dry-run ConfigMap create in ns straight to the operator's webhook, at
// the URL it registered in configName, and checks that it is allowed: the
// rate the operator answers at, which the API server does not bound.
func directReviews(ctx context.Context, b *bench, certs, configName, ns string) (func() error, error) {
	cfg, err := b.cluster.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, configName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if len(cfg.Webhooks) == 0 || cfg.Webhooks[0].ClientConfig.URL == nil {
		return nil, fmt.Errorf("%s has no webhook with a URL", configName)
	}
	url := *cfg.Webhooks[0].ClientConfig.URL
	caPEM, err := os.ReadFile(filepath.Join(certs, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: admissionWorkers}}
	object, err := json.Marshal(newConfigMap("bench-a"))
	if err != nil {
		return nil, err
	}
	var id atomic.Int64
	return func() error {
		uid := fmt.Sprintf("bench-%d", id.Add(1))
		body, _ := json.Marshal(map[string]any{
			"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"request": map[string]any{
				"uid": uid, "kind": map[string]string{"group": "", "version": "v1", "kind": "ConfigMap"},
				"resource": map[string]string{"group": "", "version": "v1", "resource": "configmaps"},
				"name":     "bench-a", "namespace": ns, "operation": "CREATE", "dryRun": true,
				"userInfo": map[string]any{"username": "bench"},
				"object":   json.RawMessage(object), "options": map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
			},
		})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var review struct {
			Response struct {
				UID     string `json:"uid"`
				Allowed bool   `json:"allowed"`
			} `json:"response"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&review); err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered %s: %v", url, resp.Status, err)
		}
		if review.Response.UID != uid || !review.Response.Allowed {
			return fmt.Errorf("%s answered %+v to %s, want it allowed", url, review.Response, uid)
		}
		return nil
	}, nil
}

// admissionConfig is the hook configuration of the admission scenario: a
// validating binding on ConfigMap creates in namespace ns.
func admissionConfig(ns string) []byte {
	data, _ := json.Marshal(map[string]any{
		"configVersion": "v1",
		"kubernetesValidating": []any{map[string]any{
			"name":           "bench.hook-operator.example.com",
			"failurePolicy":  "Fail",
			"timeoutSeconds": 10,
			"namespace":      map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}}},
			"rules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"configmaps"},
				"operations": []any{"CREATE"}}},
		}},
	})
	return data
}
