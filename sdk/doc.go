// Package sdk is the public Go package for writing hook-operator hooks as Go
// programs.
//
// A hook is an executable that hook-operator runs in two ways: with the
// single argument --config, when it must print its configuration (which
// objects it watches and when it runs); and with no arguments, when it must
// read the binding contexts from the file named by $BINDING_CONTEXT_PATH and
// write the object operations it wants applied to $KUBERNETES_PATCH_PATH.
// The contract is described in docs/hooks.md and the pages it links.
//
// With this package a Go hook declares its configuration as a Config, gets
// the binding contexts as typed values, and builds its operations with
// functions instead of hand-written JSON:
//
//	func main() {
//		sdk.Run(sdk.Config{
//			Kubernetes: []sdk.KubernetesBinding{{
//				Name: "configmaps", APIVersion: "v1", Kind: "ConfigMap",
//				JQFilter: ".data",
//			}},
//		}, handle)
//	}
//
//	func handle(ctx *sdk.Context) error {
//		for _, c := range ctx.Contexts {
//			// Synchronization delivers Objects, an Event delivers Object.
//			...
//			ctx.Emit(sdk.MergePatch(obj.Ref(), patch))
//		}
//		return nil
//	}
//
// The pieces:
//
//   - Config, KubernetesBinding, ScheduleBinding and Settings mirror the
//     configuration keys; Run prints them as JSON on --config. Fields left
//     at their zero value are left out, so the runtime's defaults apply.
//   - BindingContext, ObjectAndFilter and Object are the binding contexts.
//     Decode, DecodeFilterResult, DecodeSnapshot and
//     DecodeSnapshotFilterResults turn objects and filter results into typed
//     structs such as appsv1.Deployment.
//   - Create, CreateIfNotExists, CreateOrUpdate, Delete, DeleteInBackground,
//     DeleteNonCascading, MergePatch, JSONPatch, JQPatch and the extensions
//     Apply, ApplySet, Status and Requeue build Operations.
//   - Run (and Handle, its testable core) ties them together: the handler
//     emits operations with Context.Emit, and they are written only if it
//     returns nil, so a failing hook applies nothing.
//   - Settings.Resident (extension) keeps the hook's process running: Run
//     then serves each run as a request from the runtime, with the same
//     handler, until the runtime closes the request pipe.
//   - StartSpan, Span and TraceParent (extension) put the hook's own work
//     into the run's trace when the runtime traces runs: spans go to
//     $TRACE_SPANS_PATH, and TraceParent is the header that passes the
//     trace on to the services the hook calls. Without tracing (or under
//     shell-operator) they do nothing.
//
// A Go hook is built next to its source (go build -o hooks/x/x ./hooks/x);
// hook-operator skips the .go files of a hooks folder and runs the binary.
package sdk
