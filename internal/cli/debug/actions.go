package debug

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/hook-operator/hook-operator/internal/server"
)

// retryCommand is `debug retry QUEUE`.
func retryCommand(f *Flags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "retry QUEUE",
		Short: "Run the failed runs of QUEUE that wait for their retry now, skipping the backoff",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := act(cmd, *f, server.RetryPath+"?"+url.Values{"queue": {args[0]}}.Encode())
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "queue %s: %d failed run(s) retried now\n", args[0], n)
			return nil
		},
	}
}

// dropCommand is `debug drop QUEUE HOOK [--key KEY]`.
func dropCommand(f *Flags, stdout io.Writer) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "drop QUEUE HOOK",
		Short: "Drop the pending runs of HOOK in QUEUE, a failed one waiting for its retry included (their contexts are lost)",
		Long: `drop removes the pending runs of HOOK from QUEUE, with a failed run that waits
for its retry, so that the queue moves on. Their binding contexts are lost.
That is safe for a level-triggered hook, whose next run (any event, the next
schedule, or a Synchronization after a restart) looks at the whole state
again; it is not for a hook that acts on each event once (a Deleted event
it cleans up after, say), or whose run was the only one it gets: see
docs/operating.md. A running run is not touched; its settings.timeout ends
it.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"queue": {args[0]}, "hook": {args[1]}}
			if key != "" {
				q.Set("key", key)
			}
			n, err := act(cmd, *f, server.DropPath+"?"+q.Encode())
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "queue %s: %d pending run(s) of %s dropped\n", args[0], n, args[1])
			return nil
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "only the runs of this object (kind/namespace/name, as debug queues shows it)")
	return cmd
}

// act posts to path and returns how many tasks the operator changed.
func act(cmd *cobra.Command, f Flags, path string) (int, error) {
	body, err := Request(cmd.Context(), f, http.MethodPost, path)
	if err != nil {
		return 0, err
	}
	var a server.Answer
	if err := json.Unmarshal(body, &a); err != nil {
		return 0, fmt.Errorf("the operator's answer is not what this version of debug reads: %w", err)
	}
	return a.Tasks, nil
}
