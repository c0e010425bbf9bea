package main_test

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --debug-http against a web page in a browser on the operator's host
// (issue 60: the trigger route took a POST with any Host and Origin, so a
// page could rebind its own name to the operator's address and trigger
// hooks): from 127.0.0.2, a POST to /debug/trigger under a rebound name,
// a simple cross-site POST to the IP address, and a GET of the snapshots
// under a rebound name are each answered 403 and run nothing, while
// `hook-operator trigger --address` from 127.0.0.1 still runs the hook.
func TestIntegrationHostileDebugHTTPRebinding(t *testing.T) {
	h := newHarness(t)
	records := t.TempDir()
	record := filepath.Join(records, "runs")
	h.hook(t, "h.sh", bashHook(`{"configVersion":"v1","schedule":[{"name":"nightly","crontab":"0 3 * * *"}]}`,
		`echo run >>`+record+"\n"))
	o := h.start(t, "--debug-http")
	runs := func() int { data, _ := os.ReadFile(record); return strings.Count(string(data), "run\n") }
	_, port, err := net.SplitHostPort(o.addr)
	must(t, err)

	browser := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: attacker(0)}}).DialContext}}
	send := func(method, path, host, origin string) (int, string) {
		req, err := http.NewRequest(method, "http://"+o.addr+path, strings.NewReader("x"))
		must(t, err)
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.Header.Set("Content-Type", "text/plain") // a "simple" request: no CORS preflight
		code, body := send(browser, req)
		return code, strings.TrimSpace(body)
	}
	trigger := "/debug/trigger?hook=h.sh&binding=nightly"
	rebound := "rebind.attacker.example:" + port
	for _, a := range []struct{ what, method, path, host, origin string }{
		{"a POST under a rebound name", http.MethodPost, trigger, rebound, "http://" + rebound},
		{"a cross-site POST", http.MethodPost, trigger, o.addr, "http://attacker.example"},
		{"a GET of the snapshots under a rebound name", http.MethodGet, "/debug/snapshots?hook=h.sh", rebound, ""},
	} {
		code, body := send(a.method, a.path, a.host, a.origin)
		t.Logf("%s: %d %s", a.what, code, body)
		if code != http.StatusForbidden || !strings.Contains(body, "Forbidden: ") {
			t.Errorf("%s: %d %q, want 403 with the reason", a.what, code, body)
		}
	}
	time.Sleep(time.Second)
	if n := runs(); n != 0 {
		t.Errorf("the hook ran %d times on a web page's requests, want none", n)
	}

	out, err := exec.Command(h.bin, "trigger", "--address", o.addr, "h.sh", "--binding", "nightly").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Schedule queued") {
		t.Fatalf("hook-operator trigger --address %s: %v\n%s", o.addr, err, out)
	}
	o.waitFor(t, "the triggered run", func() bool { return runs() == 1 })
}
