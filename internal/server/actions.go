package server

import (
	"fmt"
	"net/http"
)

// Debug routes that change a queue, as `hook-operator debug retry` and
// `debug drop` ask for them (POST, on the debug listeners only).
const (
	RetryPath = "/debug/queues/retry"
	DropPath  = "/debug/queues/drop"
)

// QueueActor is what the action routes act on: *operator.Operator.
type QueueActor interface {
	RetryNow(queue string) (int, error)
	DropPending(queue, hook, key string) (int, error)
}

// Answer is what the action routes answer: how many tasks they changed.
type Answer struct {
	Tasks int `json:"tasks"`
}

// addActions adds the routes of QueueActor when op is one.
func addActions(mux *http.ServeMux, op Operator) {
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
