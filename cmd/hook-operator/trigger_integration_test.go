package main_test

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// triggerHook records each context it gets as a line: "S <binding>
// <names>" for a Synchronization, "E <binding> <watchEvent> <name>
// <filterResult>" for an Event, "T <binding>" for a Schedule.
func triggerHook(ns, record string) string {
	config := `{"configVersion":"v1","schedule":[{"name":"nightly","crontab":"0 3 * * *"}],"kubernetes":[` +
		`{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["` + ns + `"]}},"labelSelector":{"matchLabels":{"app":"trig"}},"jqFilter":".data.v"}]}`
	return bashHook(config, `set -euo pipefail
jq -r '.[] | if .type == "Synchronization" then "S \(.binding) \([.objects[].object.metadata.name] | sort | join(","))"
  elif .type == "Event" then "E \(.binding) \(.watchEvent) \(.object.metadata.name) \(.filterResult)"
  else "T \(.binding)" end' "$BINDING_CONTEXT_PATH" >>`+record+`
`)
}

// hook-operator trigger, through the binary on the local cluster: a
// binding's Synchronization, an Event of one object (watchEvent Modified,
// the object and its filterResult as the binding holds them) and a
// schedule binding's run are queued and run; the log and
// hook_triggers_total show the origin; wrong names get errors that say
// what is wrong; a standby answers who leads.
func TestIntegrationTrigger(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	records := t.TempDir()
	record := filepath.Join(records, "h")
	h.configMap(t, "cm1", map[string]string{"app": "trig"}, map[string]string{"v": "one"})
	h.hook(t, "h.sh", triggerHook(h.ns, record))
	o := h.start(t)
	read := func() string { data, _ := os.ReadFile(record); return string(data) }
	count := func(line string) func() int { return func() int { return strings.Count(read(), line) } }
	o.waitFor(t, "the first Synchronization", func() bool { return count("S cms cm1\n")() == 1 })

	trigger := func(args ...string) (string, error) {
		out, err := exec.Command(h.bin, append([]string{"trigger", "--socket", o.socket}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := trigger("h.sh", "--binding", "cms")
	if err != nil || !strings.Contains(out, "hook h.sh: binding cms: Synchronization of 1 object(s) queued in queue main") {
		t.Fatalf("trigger of the Synchronization: %v\n%s", err, out)
	}
	o.waitFor(t, "the triggered Synchronization", func() bool { return count("S cms cm1\n")() == 2 })

	out, err = trigger("h.sh", "--binding", "cms", "--object", h.ns+"/cm1")
	if err != nil || !strings.Contains(out, "Event of "+h.ns+"/cm1 queued") {
		t.Fatalf("trigger of an Event: %v\n%s", err, out)
	}
	o.waitFor(t, "the triggered Event", func() bool { return count("E cms Modified cm1 one")() == 1 })

	out, err = trigger("h.sh", "--binding", "nightly")
	if err != nil || !strings.Contains(out, "Schedule queued") {
		t.Fatalf("trigger of a schedule binding: %v\n%s", err, out)
	}
	o.waitFor(t, "the triggered Schedule run", func() bool { return count("T nightly")() == 1 })

	origin := regexp.MustCompile(`"hook":"h.sh","level":"info","msg":"hook run succeeded","operations":0,"origin":"trigger"`)
	o.waitFor(t, "a run logged with origin=trigger", func() bool { return origin.MatchString(o.logs.String()) })
	for typ, want := range map[string]float64{"Synchronization": 1, "Event": 1, "Schedule": 1} {
		if got := o.metric(t, `hook_operator_hook_triggers_total{hook="h.sh",type="`+typ+`"}`); got != want {
			t.Errorf("hook_triggers_total{type=%s} = %v, want %v", typ, got, want)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nope.sh"}, `no hook "nope.sh"; the hooks are: h.sh`},
		{[]string{"h.sh"}, "hook h.sh has several bindings; name one with --binding: cms, nightly"},
		{[]string{"h.sh", "--binding", "pods"}, `hook h.sh has no kubernetes or schedule binding "pods"; its bindings are: cms, nightly`},
		{[]string{"h.sh", "--binding", "cms", "--object", h.ns + "/missing"}, `binding "cms" holds no ConfigMap "` + h.ns + `/missing"`},
		{[]string{"h.sh", "--binding", "nightly", "--object", h.ns + "/cm1"}, `binding "nightly" is a schedule binding, which has no objects`},
	} {
		out, err := trigger(tc.args...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("trigger %v: %v\n%s\nwant an error saying %q", tc.args, err, out, tc.want)
		}
	}

	// A standby says who leads.
	lead := h.start(t, electionArgs(h.ns, "lead-a")...)
	lead.waitLog(t, "leader election: leading")
	standby := h.start(t, electionArgs(h.ns, "standby-b")...)
	standby.waitLog(t, "leader election: standby")
	sout, err := exec.Command(h.bin, "trigger", "--socket", standby.socket, "h.sh", "--binding", "cms").CombinedOutput()
	if err == nil || !strings.Contains(string(sout), "this replica (standby-b) is a standby and runs no hooks; the leader is lead-a") {
		t.Errorf("trigger on a standby: %v\n%s", err, sout)
	}
}

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
