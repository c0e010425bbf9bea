package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/hook-operator/hook-operator/internal/debugapi"
)

// Debug routes that change a queue, as `hook-operator debug retry` and
// `debug drop` ask for them (POST, on the debug listeners only).
const (
	RetryPath = "/debug/queues/retry"
	DropPath  = "/debug/queues/drop"
	// TriggerPath queues a run, as `hook-operator trigger` asks for it.
	TriggerPath = "/debug/trigger"
)

// Triggerer is what the trigger route acts on: *operator.Operator.
type Triggerer interface {
	Trigger(debugapi.TriggerRequest) (debugapi.TriggerAnswer, error)
}

// QueueActor is what the action routes act on: *operator.Operator.
type QueueActor interface {
	RetryNow(queue string) (int, error)
	DropPending(queue, hook, key string) (int, error)
}

// Answer is what the action routes answer: how many tasks they changed.
type Answer struct {
	Tasks int `json:"tasks"`
}

// addActions adds the routes of QueueActor and Triggerer when op is one.
func addActions(mux *http.ServeMux, op Operator) {
	if tr, ok := op.(Triggerer); ok {
		mux.HandleFunc("POST "+TriggerPath, func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if q.Get("hook") == "" {
				http.Error(w, "name the hook: ?hook=NAME[&binding=NAME][&object=NS/NAME]", http.StatusBadRequest)
				return
			}
			a, err := tr.Trigger(debugapi.TriggerRequest{Hook: q.Get("hook"), Binding: q.Get("binding"), Object: q.Get("object")})
			var standby *debugapi.StandbyError
			switch {
			case errors.As(err, &standby):
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
			case err != nil:
				http.Error(w, err.Error(), http.StatusConflict)
			default:
				writeJSON(w, a)
			}
		})
	}
	a, ok := op.(QueueActor)
	if !ok {
		return
	}
	mux.HandleFunc("POST "+RetryPath, func(w http.ResponseWriter, r *http.Request) {
		queue := r.URL.Query().Get("queue")
		if queue == "" {
			http.Error(w, "name the queue: ?queue=NAME", http.StatusBadRequest)
			return
		}
		n, err := a.RetryNow(queue)
		answer(w, n, err)
	})
	mux.HandleFunc("POST "+DropPath, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("queue") == "" || q.Get("hook") == "" {
			http.Error(w, "name the queue and the hook: ?queue=NAME&hook=PATH[&key=KEY]", http.StatusBadRequest)
			return
		}
		n, err := a.DropPending(q.Get("queue"), q.Get("hook"), q.Get("key"))
		answer(w, n, err)
	})
}

func answer(w http.ResponseWriter, n int, err error) {
	if err != nil {
		http.Error(w, fmt.Sprint(err), http.StatusConflict)
		return
	}
	writeJSON(w, Answer{Tasks: n})
}
