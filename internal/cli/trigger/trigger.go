// Package trigger is the `hook-operator trigger` command: it asks a running
// operator, over its debug socket, to queue a run of a hook's binding now.
package trigger

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/hook-operator/hook-operator/internal/cli/debug"
	"github.com/hook-operator/hook-operator/internal/debugapi"
	"github.com/hook-operator/hook-operator/internal/server"
)

// New returns the trigger command, printing what was queued to stdout.
func New(stdout io.Writer) *cobra.Command {
	var (
		f               debug.Flags
		binding, object string
	)
	cmd := &cobra.Command{
		Use:   "trigger HOOK",
		Short: "Ask a running operator to run a hook's binding now, through its queue",
		Long: `trigger asks the operator (over its debug socket, found as debug finds it)
to queue a run of HOOK's binding now, without changing an object:

- a kubernetes binding's Synchronization, with the objects it holds now;
- with --object NAMESPACE/NAME (NAME for a cluster-scoped kind), an Event of
  that object with watchEvent Modified, as if it had just changed;
- a schedule binding's Schedule context.

The run waits behind what is pending in the binding's queue and combines
and retries as any run does. Its log lines carry origin=trigger, and
hook_triggers_total counts it. --binding may be left out when the hook has
one kubernetes or schedule binding. A standby replica answers with the
replica that leads. See docs/operating.md.`,
		Example: `  # In the operator's Pod: run the binding's Synchronization now
  kubectl exec deploy/hook-operator -- hook-operator trigger pods/on-pod.sh --binding pods

  # An Event for one object
  hook-operator trigger pods/on-pod.sh --binding pods --object default/web-0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"hook": {args[0]}}
			if binding != "" {
				q.Set("binding", binding)
			}
			if object != "" {
				q.Set("object", object)
			}
			body, err := debug.Request(cmd.Context(), f, http.MethodPost, server.TriggerPath+"?"+q.Encode())
			if err != nil {
				return err
			}
			var a debugapi.TriggerAnswer
			if err := json.Unmarshal(body, &a); err != nil {
				return fmt.Errorf("the operator's answer is not what this version of trigger reads: %w", err)
			}
			what := a.Type
			switch {
			case object != "":
				what += " of " + object
			case a.Type == "Synchronization":
				what += fmt.Sprintf(" of %d object(s)", a.Objects)
			}
			fmt.Fprintf(stdout, "hook %s: binding %s: %s queued in queue %s\n", a.Hook, a.Binding, what, a.Queue)
			return nil
		},
	}
	fs := cmd.Flags()
	debug.BindTarget(fs, &f)
	fs.StringVar(&binding, "binding", "", "the kubernetes or schedule binding to run (may be left out when the hook has one)")
	fs.StringVar(&object, "object", "", "NAMESPACE/NAME (NAME if cluster-scoped): an Event of this object instead of a Synchronization")
	return cmd
}
