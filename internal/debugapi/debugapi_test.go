package debugapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestJSONNames pins the JSON of every type the debug routes serve: a
// renamed or dropped field breaks the scripts that read `debug ... -o json`
// and an older `hook-operator debug` talking to a newer operator.
func TestJSONNames(t *testing.T) {
	age := 2.5
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"HookState, every field", HookState{
			Name: "pods.sh", Bindings: []BindingState{{Name: "pods", Kind: "kubernetes"}}, Runs: 3, Failures: 1,
			LastRun: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), LastError: "exit status 1",
		}, `{"name":"pods.sh","bindings":[{"name":"pods","kind":"kubernetes","objects":0,"synced":false}],"runs":3,"failures":1,"lastRun":"2026-01-02T03:04:05Z","lastError":"exit status 1"}`},
		{"HookState, zero", HookState{Name: "idle.sh", Bindings: []BindingState{}},
			`{"name":"idle.sh","bindings":[],"runs":0,"failures":0}`},
		{"BindingState, kubernetes", BindingState{
			Name: "pods", Kind: "kubernetes", Watches: "/v1, Resource=pods", Objects: 4, Synced: true, Phase: "synced",
			ViewAgeSeconds: &age, StaleAfterSeconds: 60, Stale: true,
		}, `{"name":"pods","kind":"kubernetes","watches":"/v1, Resource=pods","objects":4,"synced":true,"phase":"synced","viewAgeSeconds":2.5,"staleAfterSeconds":60,"stale":true}`},
		{"BindingState, held", BindingState{
			Name: "cms", Kind: "kubernetes", Phase: "held", Waiting: "kind Foo is not served", HeldBy: []string{"foos"}, Held: "waits for foos",
		}, `{"name":"cms","kind":"kubernetes","objects":0,"synced":false,"phase":"held","waiting":"kind Foo is not served","heldBy":["foos"],"held":"waits for foos"}`},
		{"BindingState, schedule", BindingState{Name: "nightly", Kind: "schedule", Crontab: "0 3 * * *"},
			`{"name":"nightly","kind":"schedule","objects":0,"synced":false,"crontab":"0 3 * * *"}`},
		{"SnapshotState", SnapshotState{Binding: "pods", Objects: []any{map[string]any{"name": "p", "namespace": "a"}}},
			`{"binding":"pods","objects":[{"name":"p","namespace":"a"}]}`},
		{"RoleState, single", RoleState{Role: "single"}, `{"role":"single"}`},
		{"RoleState, sharded", RoleState{Role: "leader", Identity: "a", Ring: &RingMembers{
			ShardBy: "uid", Members: []RingMember{{Identity: "a", Share: 0.5}, {Identity: "b", Share: 0.5}},
		}}, `{"role":"leader","identity":"a","ring":{"shardBy":"uid","members":[{"identity":"a","share":0.5},{"identity":"b","share":0.5}]}}`},
		{"TriggerAnswer", TriggerAnswer{Hook: "pods.sh", Binding: "pods", Type: "Synchronization", Queue: "main", Objects: 2},
			`{"hook":"pods.sh","binding":"pods","type":"Synchronization","queue":"main","objects":2}`},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestStandbyErrorNamesTheLeader(t *testing.T) {
	if got := (&StandbyError{Identity: "b", Leader: "a"}).Error(); !strings.Contains(got, "this replica (b) is a standby") || !strings.Contains(got, "the leader is a") {
		t.Errorf("with a leader seen: %q", got)
	}
	if got := (&StandbyError{Identity: "b"}).Error(); !strings.Contains(got, "no leader has been seen yet") {
		t.Errorf("with none seen: %q", got)
	}
}
