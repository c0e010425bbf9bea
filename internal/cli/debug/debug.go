// Package debug implements `hook-operator debug`: it asks a running
// operator, through its debug socket (or HTTP listener), what its queues,
// hooks and snapshots hold, and prints tables or JSON.
package debug

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	"github.com/hook-operator/hook-operator/internal/debugapi"
	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/server"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// Flags hold where the operator is and how to print.
type Flags struct {
	Socket  string
	Address string
	Output  string
}

// New returns the debug command with its subcommands.
func New(stdout io.Writer) *cobra.Command {
	var f Flags
	cmd := &cobra.Command{
		Use:   "debug",
		Short: "Show what a running operator's queues, hooks and snapshots hold, and its role",
		Long: `debug asks a running "hook-operator start" what it holds now:

  queues              every queue: the running task (for a hook with
                      settings.parallelism, the running tasks with their
                      objects), and the pending ones with their attempts and
                      last error (a failed task holds its queue, or its object)
  hooks               every hook: its bindings (objects held, synchronized or
                      waiting for their kind, the age of their view, STALE
                      above their staleAfter), runs, failures, last error
  snapshots HOOK      the objects each kubernetes binding of HOOK holds, as the
                      hook sees them (Secret data masked)
  role                leader or standby (with --leader-elect, and the replica's
                      identity), or single

and acts on a stuck queue:

  retry QUEUE         run the failed runs of QUEUE that wait for their retry
                      now, skipping the backoff
  drop QUEUE HOOK     drop the pending runs of HOOK in QUEUE (--key: only those
                      of one object of a hook with settings.parallelism), a
                      failed one waiting for its retry included; their binding
                      contexts are lost, which is safe only for a hook whose
                      next run sees the whole state again (docs/operating.md)

It connects to the operator's debug socket (--socket, the same default as
start's --debug-socket), so in a Pod run it with
"kubectl exec deploy/hook-operator -- hook-operator debug queues".
--address reaches an operator started with --debug-http instead.`,
		Example: `  hook-operator debug queues
  hook-operator debug hooks -o json
  hook-operator debug snapshots flights/flightticket.sh
  hook-operator debug queues --address 127.0.0.1:9115
  hook-operator debug retry main
  hook-operator debug drop main flights/flightticket.sh`,
		Args: suggestCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("name what to show or do: %s queues|hooks|snapshots HOOK|role|retry QUEUE|drop QUEUE HOOK", cmd.CommandPath())
		},
	}
	fs := cmd.PersistentFlags()
	BindTarget(fs, &f)
	fs.StringVarP(&f.Output, "output", "o", "table", "table or json")
	cmd.AddCommand(
		&cobra.Command{
			Use: "queues", Short: "Show every queue's running and pending tasks", Args: cobra.NoArgs, SuggestFor: []string{"queue"},
			RunE: func(cmd *cobra.Command, _ []string) error {
				var qs []queue.QueueState
				return show(cmd.Context(), f, server.QueuesPath, &qs, stdout, func(w *tabwriter.Writer) { queuesTable(w, qs) })
			},
		},
		&cobra.Command{
			Use: "hooks", Short: "Show every hook's bindings and runs", Args: cobra.NoArgs, SuggestFor: []string{"hook"},
			RunE: func(cmd *cobra.Command, _ []string) error {
				var hs []debugapi.HookState
				return show(cmd.Context(), f, server.HooksPath, &hs, stdout, func(w *tabwriter.Writer) { hooksTable(w, hs) })
			},
		},
		&cobra.Command{
			Use: "role", Short: "Show whether the operator leads, stands by, or runs without leader election; with --sharding, the ring's members and shares", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				var r debugapi.RoleState
				return show(cmd.Context(), f, server.RolePath, &r, stdout, func(w *tabwriter.Writer) {
					fmt.Fprintln(w, "ROLE\tIDENTITY")
					fmt.Fprintf(w, "%s\t%s\n", r.Role, r.Identity)
					if r.Ring != nil {
						fmt.Fprintf(w, "\nRING MEMBER (by %s)\tSHARE\n", r.Ring.ShardBy)
						for _, m := range r.Ring.Members {
							fmt.Fprintf(w, "%s\t%.1f%%\n", m.Identity, 100*m.Share)
						}
					}
				})
			},
		},
		retryCommand(&f, stdout),
		dropCommand(&f, stdout),
		&cobra.Command{
			Use: "snapshots HOOK", Short: "Show the objects the kubernetes bindings of HOOK hold", Args: cobra.ExactArgs(1), SuggestFor: []string{"snapshot"},
			RunE: func(cmd *cobra.Command, args []string) error {
				var ss []debugapi.SnapshotState
				path := server.SnapshotsPath + "?hook=" + url.QueryEscape(args[0])
				return show(cmd.Context(), f, path, &ss, stdout, func(w *tabwriter.Writer) { snapshotsTable(w, ss) })
			},
		},
	)
	return cmd
}

// suggestCommand refuses arguments to debug itself, saying which of its
// commands comes nearest (cobra's suggestions, and shell-operator's names:
// queue, hook, snapshot).
func suggestCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	s := cmd.SuggestionsFor(args[0])
	slices.Sort(s)
	for i, name := range slices.Compact(s) {
		if i == 0 {
			msg += "; did you mean "
		} else {
			msg += " or "
		}
		msg += cmd.CommandPath() + " " + name
	}
	if len(s) > 0 {
		msg += "?"
	}
	return errors.New(msg)
}

// show fetches path into v and prints it as JSON or with table.
func show(ctx context.Context, f Flags, path string, v any, out io.Writer, table func(*tabwriter.Writer)) error {
	if f.Output != "table" && f.Output != "json" {
		return fmt.Errorf("--output %q: use table or json", f.Output)
	}
	body, err := fetch(ctx, f, path)
	if err != nil {
		return err
	}
	if f.Output == "json" {
		_, err := out.Write(body)
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the operator's answer is not what this version of debug reads: %w", err)
	}
	return printTable(out, table)
}

// printTable prints what table writes, aligned, with the control
// characters of its cells escaped: hook and binding names, objects' names
// and errors come from hooks and the cluster, and must not drive the
// terminal (limit.Printable).
func printTable(out io.Writer, table func(*tabwriter.Writer)) error {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	table(w)
	if err := w.Flush(); err != nil {
		return err
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = limit.Printable(l)
	}
	_, err := io.WriteString(out, strings.Join(lines, "\n"))
	return err
}

func fetch(ctx context.Context, f Flags, path string) ([]byte, error) {
	return Request(ctx, f, http.MethodGet, path)
}

// BindTarget adds --socket and --address, where the operator is, to fs:
// debug and trigger find the operator the same way.
func BindTarget(fs *pflag.FlagSet, f *Flags) {
	envflag.Define(fs,
		// The variable of start's --debug-socket, so that both find the
		// same socket.
		envflag.Setting{Name: "socket", Value: envflag.String(&f.Socket, debugapi.DefaultSocket()), Usage: "the operator's debug socket (start --debug-socket)", Env: debugapi.EnvSocket,
			Shell: envflag.Shell{Flag: "debug-unix-socket", Env: []string{"DEBUG_UNIX_SOCKET"}}},
		envflag.Setting{Name: "address", Value: envflag.String(&f.Address, ""), Usage: "host:port of an operator started with --debug-http; used instead of --socket", Env: envflag.NoEnv})
}

// Request sends a request with method to path and returns the answer's
// body when it is 200 OK. It carries server.DebugHeader, which a POST to
// --debug-http's listener needs.
func Request(ctx context.Context, f Flags, method, path string) ([]byte, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + f.Address
	where := f.Address
	if f.Address == "" {
		where = f.Socket
		base = "http://operator"
		client.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", f.Socket)
		}}
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(server.DebugHeader, "1")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the operator at %s (is it running? set --socket or --address): %w", where, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the operator answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}

func queuesTable(w *tabwriter.Writer, qs []queue.QueueState) {
	fmt.Fprintln(w, "QUEUE\tSTATE\tHOOK\tBINDINGS\tCONTEXTS\tATTEMPTS\tSINCE\tLAST ERROR")
	for _, q := range qs {
		running := q.Parallel
		if q.Running != nil {
			running = append([]queue.TaskState{*q.Running}, running...)
		}
		for _, r := range running {
			fmt.Fprintf(w, "%s\trunning\t%s\t%s\t%d\t%d\t%s\t%s\n", q.Name, hookAndKey(r), strings.Join(r.Bindings, ","), r.Contexts, r.Attempts, ago(r.Started), firstLine(r.LastError))
		}
		for i, t := range q.Pending {
			state := "pending"
			switch {
			case !t.RetryAt.IsZero():
				state = "retry in " + time.Until(t.RetryAt).Round(time.Second).String()
			case i == 0 && t.Attempts > 0 && t.Key == "":
				state = "retry in " + time.Until(q.RetryAt).Round(time.Second).String()
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", q.Name, state, hookAndKey(t), strings.Join(t.Bindings, ","), t.Contexts, t.Attempts, ago(t.Enqueued), firstLine(t.LastError))
		}
		if len(running) == 0 && len(q.Pending) == 0 {
			fmt.Fprintf(w, "%s\tidle\t\t\t\t\t\t\n", q.Name)
		}
	}
	if notes := heldNotes(qs); len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
}

// heldNotes says, for each failed task that waits for its retry, what it
// holds (its queue, or for a task with a key its object's runs), and the
// commands that free it.
func heldNotes(qs []queue.QueueState) []string {
	var out []string
	for _, q := range qs {
		for i, t := range q.Pending {
			if t.Attempts == 0 || t.DropCommand == "" {
				continue
			}
			holds := "holds queue " + q.Name
			if t.Key != "" {
				holds = "holds the runs of " + t.Key + " in queue " + q.Name
			} else if i > 0 {
				continue // not the head: it holds nothing yet
			}
			out = append(out, fmt.Sprintf("%s's failed run (%d attempt(s)) %s until its retry: `%s` runs it now, `%s` drops it",
				t.Hook, t.Attempts, holds, queue.RetryCommand(q.Name), t.DropCommand))
		}
	}
	return out
}

// hookAndKey names a task's hook, with its object for a parallel run.
func hookAndKey(t queue.TaskState) string {
	if t.Key == "" {
		return t.Hook
	}
	return t.Hook + " [" + t.Key + "]"
}

func hooksTable(w *tabwriter.Writer, hs []debugapi.HookState) {
	fmt.Fprintln(w, "HOOK\tBINDING\tKIND\tOBJECTS\tSTATE\tVIEW AGE\tRUNS\tFAILURES\tLAST RUN\tLAST ERROR")
	for _, h := range hs {
		for i, b := range h.Bindings {
			state := ""
			switch {
			case b.Kind == "schedule":
				state = b.Crontab
			case b.Kind != "kubernetes":
			case b.Waiting != "":
				state = "waiting: " + b.Waiting
			case b.Synced:
				state = "synchronized"
			case b.Phase == watch.Held.String() && b.Held != "":
				state = "held: " + b.Held
			case b.Phase == watch.Held.String():
				state = "held: waiting for its group's or included snapshots"
			default:
				state = "synchronizing (" + b.Phase + ")"
			}
			runs, failures, last, lastErr := "", "", "", ""
			if i == 0 {
				runs, failures, last, lastErr = fmt.Sprint(h.Runs), fmt.Sprint(h.Failures), ago(h.LastRun), firstLine(h.LastError)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Name, b.Name, b.Kind, b.Objects, state, viewAge(b), runs, failures, last, lastErr)
		}
		if len(h.Bindings) == 0 {
			fmt.Fprintf(w, "%s\t-\t-\t0\t\t\t%d\t%d\t%s\t%s\n", h.Name, h.Runs, h.Failures, ago(h.LastRun), firstLine(h.LastError))
		}
	}
}

// viewAge is a watching kubernetes binding's view age, marked when it is
// above the binding's stale threshold: "4s", "STALE 5m3s > 3m0s"; "-" for
// the others.
func viewAge(b debugapi.BindingState) string {
	if b.ViewAgeSeconds == nil {
		return "-"
	}
	age := (time.Duration(*b.ViewAgeSeconds * float64(time.Second))).Round(time.Second)
	if b.Stale {
		return fmt.Sprintf("STALE %s > %s", age, time.Duration(b.StaleAfterSeconds*float64(time.Second)))
	}
	return age.String()
}

func snapshotsTable(w *tabwriter.Writer, ss []debugapi.SnapshotState) {
	fmt.Fprintln(w, "BINDING\tNAMESPACE\tNAME\tFILTER RESULT")
	for _, s := range ss {
		for _, o := range s.Objects {
			m, _ := o.(map[string]any)
			ns, _ := m["namespace"].(string)
			name, _ := m["name"].(string)
			fr := "-"
			if v, ok := m["filterResult"]; ok {
				data, _ := json.Marshal(v)
				fr = truncate(string(data), 80)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.Binding, ns, name, fr)
		}
		if len(s.Objects) == 0 {
			fmt.Fprintf(w, "%s\t\t(no objects)\t\n", s.Binding)
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	return truncate(s, 100)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}
