package main_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/procfs"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// The attacks on the webhook listeners of issue 60 (items 1 and 2), each
// against a live operator from an attacker address of its own
// (127.0.0.2) while the API server, the legitimate client, is 127.0.0.1.

// hostileWebhooks starts an operator on h's hooks, serving
// admission on one listener and, when conversion is set, conversions on a
// second; it returns the operator and the listeners' addresses.
func hostileWebhooks(t *testing.T, h *harness, conversion bool, env []string, extra ...string) (o *observed, admission, conv string) {
	t.Helper()
	admission = "127.0.0.1:" + testoperator.FreePort(t)
	args := []string{"--webhook-listen-address", admission, "--webhook-self-signed", "--operator-namespace", h.ns, "--webhook-register=false"}
	if conversion {
		conv = "127.0.0.1:" + testoperator.FreePort(t)
		args = append(args, "--conversion-webhook-listen-address", conv)
	}
	o = h.startEnv(t, env, append(args, extra...)...)
	o.waitFor(t, "the webhook listeners", func() bool {
		logs := o.logs.String()
		return strings.Contains(logs, `"msg":"serving webhooks"`) && (!conversion || strings.Contains(logs, `"msg":"serving conversion webhooks"`))
	})
	return o, admission, conv
}

// attackerClient is an HTTP client whose connections come from ip, and
// keep alive up to conns of them.
func attackerClient(ip net.IP, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		DialContext: d.DialContext, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the self-signed certificate
		MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, ForceAttemptHTTP2: false,
	}}
}

// post sends body to url and reads the answer; it returns the status
// (0 when the request failed).
func post(client *http.Client, url string, body []byte) int {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// A pod that POSTs reviews to paths no binding serves, 3,000 to each
// listener with paths of 2 KB holding escape sequences and newlines: each
// is answered 404 and counted by listener as not_found, and the log grows
// by 256 KB at most for each 3,000 (before: 12 MB, every request logged
// in full and none counted). A review sent meanwhile is answered.
func TestIntegrationHostileUnknownWebhookPaths(t *testing.T) {
	h := newHarness(t)
	h.hook(t, "allow.sh", bashHook(`{"configVersion":"v1","kubernetesValidating":[{"name":"hostile.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}]}]}`,
		`echo '{"allowed": true}' >"$VALIDATING_RESPONSE_PATH"`+"\n"))
	h.hook(t, "convert.sh", bashHook(`{"configVersion":"v1","kubernetesCustomResourceConversion":[{"name":"to_v2","crdName":"things.hostile.example.com","conversions":[{"fromVersion":"hostile.example.com/v1","toVersion":"hostile.example.com/v2"}]}]}`,
		`echo '{"failedMessage": "no"}' >"$CONVERSION_RESPONSE_PATH"`+"\n"))
	o, admission, conversion := hostileWebhooks(t, h, true, nil)
	legit := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // the self-signed certificate
	const n = 3000
	pad := "-\x1b[2J\x1b]0;owned\x07\r\n" + strings.Repeat("a", 2048)
	for _, l := range []struct{ listener, addr, path, body string }{
		{"admission", admission, "/hooks/nope-%d" + pad, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":{"data":"` + strings.Repeat("x", 2048) + `"}}}`},
		{"conversion", conversion, "/nope-%d" + pad, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"x/v2","objects":[{"apiVersion":"x/v1","data":"` + strings.Repeat("x", 2048) + `"}]}}`},
	} {
		client := attackerClient(attacker(0), 8)
		before := len(o.logs.String())
		start := time.Now()
		var sent atomic.Int64
		codes := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := sent.Add(1); i <= n; i = sent.Add(1) {
					u := url.URL{Scheme: "https", Host: l.addr, Path: fmt.Sprintf(l.path, i)} // the control characters escaped
					code := post(client, u.String(), []byte(l.body))
					mu.Lock()
					codes[code]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		took, answer := review(admission, legit)
		grew := len(o.logs.String()) - before
		counted := o.metric(t, fmt.Sprintf(`hook_operator_webhook_rejected_requests_total{listener=%q,reason="not_found"}`, l.listener))
		t.Logf("%s listener: %d requests to unknown paths in %s, answered %v; the log grew by %d KB; counted %v; a review then answered in %s",
			l.listener, n, time.Since(start).Round(time.Millisecond), codes, grew>>10, counted, took.Round(time.Millisecond))
		if codes[http.StatusNotFound] != n {
			t.Errorf("%s listener: answers %v, want %d of 404", l.listener, codes, n)
		}
		if grew > 256<<10 {
			t.Errorf("%s listener: the log grew by %d KB for %d requests to unknown paths; want 256 KB at most", l.listener, grew>>10, n)
		}
		if counted != n {
			t.Errorf("%s listener: webhook_rejected_requests_total not_found is %v, want %d", l.listener, counted, n)
		}
		if took > reviewBound || !strings.Contains(answer, `"allowed":true`) {
			t.Errorf("a review after the flood: %s after %s; want it allowed within %s", answer, took, reviewBound)
		}
		client.CloseIdleConnections()
	}
	if logs := o.logs.String(); strings.Contains(logs, "\x1b") || strings.Contains(logs, "\x07") {
		t.Errorf("an escape sequence of a path reached the log unescaped")
	}
}

// treeRSS is the resident memory of process pid and every process below
// it (the hooks and what they run), summed.
func treeRSS(t *testing.T, pid int) int64 {
	below, _, err := procfs.DescendantsRSS(pid)
	must(t, err)
	return rss(t, pid) + below
}

// bigReview is an AdmissionReview of about size bytes whose object holds
// an array of small objects, the costliest for jq to parse: jq 1.6 holds
// it at 32 times its size.
func bigReview(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-big","kind":{"group":"","version":"v1","kind":"ConfigMap"},"operation":"CREATE","object":{"metadata":{"name":"x"},"data":[`)
	for i := 0; b.Len() < size-100; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"k%d":%d}`, i%10, i)
	}
	b.WriteString(`]}}}`)
	return b.Bytes()
}

// A pod that sends 7.8 MB AdmissionReviews (small objects, which jq holds
// at 230 MB) on 40 connections to a validating hook that runs jq on them, against an operator given what
// the chart gives it (a 512Mi limit: GOMEMLIMIT 384MiB, and
// --webhook-hook-memory at auto's 128Mi): the operator and its hooks'
// processes together stay under 512 MiB (before: the operator 254 MB,
// with its 14 jq processes 660 MB), and a review from the API server's
// address is answered meanwhile.
func TestIntegrationHostileWebhookHookMemory(t *testing.T) {
	h := newHarness(t)
	h.hook(t, "jq.sh", bashHook(`{"configVersion":"v1","kubernetesValidating":[{"name":"hostile.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}]}]}`,
		`jq -c '[.[0].review.request.object.data | length]' "$BINDING_CONTEXT_PATH" >/dev/null
echo '{"allowed": true}' >"$VALIDATING_RESPONSE_PATH"`+"\n"))
	o, admission, _ := hostileWebhooks(t, h, false, []string{"GOMEMLIMIT=384MiB"}, "--webhook-hook-memory", "128Mi")
	pid := o.pid()
	body := bigReview(7_800_000)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	client := attackerClient(attacker(0), 40)
	var answered atomic.Int64
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if post(client, "https://"+admission+"/hooks/hostile-example-com?timeout=30s", body) == http.StatusOK {
					answered.Add(1)
				}
			}
		}()
	}
	before := treeRSS(t, pid)
	peak, operatorPeak, hooksAtPeak := before, rss(t, pid), 0
	sample := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			op := rss(t, pid)
			below, n, err := procfs.DescendantsRSS(pid)
			must(t, err)
			operatorPeak = max(operatorPeak, op)
			if op+below > peak {
				peak, hooksAtPeak = op+below, n
			}
		}
	}
	sample(5 * time.Second)
	legit := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	took, answer := review(admission, legit)
	sample(15 * time.Second)
	t.Logf("operator and hooks: %d MB before, %d MB at most (%d processes below the operator then); the operator alone %d MB at most; %d big reviews answered in 20 s; a review answered in %s: %s",
		before>>20, peak>>20, hooksAtPeak, operatorPeak>>20, answered.Load(), took.Round(time.Millisecond), answer)
	if peak >= 512<<20 {
		t.Errorf("the operator and its hooks reached %d MB under attack; want under the chart's 512 MiB", peak>>20)
	}
	if took > reviewBound || !strings.Contains(answer, `"allowed":true`) {
		t.Errorf("a review under attack: %s after %s; want it allowed within %s", answer, took.Round(time.Millisecond), reviewBound)
	}
	if answered.Load() == 0 {
		t.Errorf("no big review was answered: the bound refuses them instead of running them in turn")
	}
}

// A pod that holds 64 keep-alive connections of small forged reviews to a
// hook that takes half a second (one that asks another service, say):
// the webhook's 16 slots stay busy, and before, a review from the API
// server's address waited behind the pod's queued ones (a median of 6.1 s
// here, 0.6 s alone). One address holds three quarters of the slots at
// most, so the review takes a free one at once: its median stays within
// shareBound of a review alone (1.2 s, 0.7 s alone, on the loaded 2-core
// machine).
func TestIntegrationHostileWebhookSlotShare(t *testing.T) {
	const shareBound = 2500 * time.Millisecond
	h := newHarness(t)
	h.hook(t, "slow.sh", bashHook(`{"configVersion":"v1","kubernetesValidating":[{"name":"hostile.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}]}]}`,
		`sleep 0.5
echo '{"allowed": true}' >"$VALIDATING_RESPONSE_PATH"`+"\n"))
	_, admission, _ := hostileWebhooks(t, h, false, nil)
	legit := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	quiet, _ := review(admission, legit)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	client := attackerClient(attacker(0), 64)
	forged := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"forged","kind":{"group":"","version":"v1","kind":"ConfigMap"},"operation":"CREATE","object":{"metadata":{"name":"f"}}}}`)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				post(client, "https://"+admission+"/hooks/hostile-example-com?timeout=30s", forged)
			}
		}()
	}
	time.Sleep(3 * time.Second)
	var took []time.Duration
	for range 7 {
		d, answer := review(admission, legit)
		if !strings.Contains(answer, `"allowed":true`) {
			t.Errorf("a review under attack: %s after %s; want it allowed", answer, d.Round(time.Millisecond))
		}
		took = append(took, d)
	}
	slices.Sort(took)
	median := took[len(took)/2]
	t.Logf("a review alone: %s; under 64 connections of forged reviews: median %s, %s to %s", quiet.Round(time.Millisecond),
		median.Round(time.Millisecond), took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	if median > shareBound+quiet {
		t.Errorf("a review's median under attack is %s (alone: %s); want it within %s more", median.Round(time.Millisecond), quiet.Round(time.Millisecond), shareBound)
	}
}
