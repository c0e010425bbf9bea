package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
