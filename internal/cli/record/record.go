// Package record implements `hook-operator record`: watch a live cluster as
// the hooks' kubernetes bindings would, and write what they receive to a
// fixture file that `hook-operator replay` and hook tests run hooks
// against. It writes nothing to the cluster and runs no hook.
package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	hookscmd "github.com/hook-operator/hook-operator/internal/cli/hooks"
	"github.com/hook-operator/hook-operator/internal/cli/kubeflags"
	"github.com/hook-operator/hook-operator/internal/fixture"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/redact"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// Flags holds the record command's settings.
type Flags struct {
	HooksDir      string
	ConfigTimeout time.Duration
	// Kube chooses the cluster.
	Kube kubeflags.Flags
	// Out is the fixture file to write, or "-" for stdout.
	Out string
	// Duration is how long to record events after every binding has
	// synchronized; 0 records only the objects.
	Duration time.Duration
	// ShowSecrets keeps Secret data; by default it is redacted.
	ShowSecrets bool
	// HooksFolder is --hooks-allow-external-symlinks.
	HooksFolder hook.FolderOptions
}

// The client's request rate: a recording lists and watches, a few requests
// per binding.
const (
	clientQPS   = 50
	clientBurst = 100
)

// progressEvery is how often a long wait for Synchronization is logged.
const progressEvery = 10 * time.Second

// New returns the record command. The fixture goes to stdout with --out -;
// log is configured by the root command before the command runs.
func New(stdout io.Writer, log *logrus.Logger) *cobra.Command {
	var f Flags
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Record what the hooks' kubernetes bindings receive from a cluster into a fixture file",
		Long: `record loads the hooks under --hooks-dir, watches the cluster for every
kubernetes binding as the operator would, and writes what the bindings receive
to --out as a fixture file: the objects of every binding's Synchronization and,
with --duration, the Added, Modified and Deleted events that follow, in order.
replay and hook tests run hooks against that file.

Nothing is written to the cluster and no hook runs (each is only asked for its
configuration with --config). The bindings are watched in full: jqFilters are
not applied (replay runs them), every event type is kept, and finalizers are
not added, so an object being deleted is recorded as Modified with its
deletionTimestamp. A change seen by several bindings is recorded once.

The file also makes the kinds known to replay: for every kind that is not built
into Kubernetes it holds the kind's CustomResourceDefinition, or a declaration
under resources when the CRD cannot be read. When a binding selects namespaces
by label, every Namespace is recorded too.

Secret data is redacted: the values of data and stringData, and the
kubectl.kubernetes.io/last-applied-configuration annotation of Secrets, read
` + redact.Mask + `. --show-secrets keeps them. The file is written with mode 0600
when the recording ends (after --duration, or on SIGINT or SIGTERM), replacing
--out at once.`,
		Example: `  # The objects the hooks see now
  hook-operator record --hooks-dir ./hooks --out fixture.yaml

  # The objects, then five minutes of events (Ctrl-C ends early)
  hook-operator record --hooks-dir ./hooks --out fixture.yaml --duration 5m

  # Run the hooks against the recording
  hook-operator replay --hooks-dir ./hooks --objects fixture.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return Run(ctx, f, stdout, log)
		},
	}
	fs := cmd.Flags()
	hookscmd.BindHooksDir(fs, &f.HooksDir)
	hookscmd.BindConfigTimeout(fs, &f.ConfigTimeout)
	hookscmd.BindFolder(fs, &f.HooksFolder)
	envflag.Define(fs, kubeflags.Settings(&f.Kube)...)
	fs.StringVar(&f.Out, "out", "", "fixture file to write (mode 0600), or - for stdout (required)")
	fs.DurationVar(&f.Duration, "duration", 0, "record events for this long after the objects (0: only the objects)")
	fs.BoolVar(&f.ShowSecrets, "show-secrets", false, "keep Secret data in the file instead of redacting it")
	return cmd
}

// Run records from the cluster until the objects are recorded and
// f.Duration has passed or ctx ends, then writes the fixture to f.Out
// (stdout for "-"). A ctx that ends before every binding has synchronized
// writes nothing.
func Run(ctx context.Context, f Flags, stdout io.Writer, log *logrus.Logger) error {
	if f.Out == "" {
		return errors.New("--out is required: name the fixture file to write, or - for stdout")
	}
	if f.Duration < 0 {
		return fmt.Errorf("--duration %s: use 0 to record only the objects, or a positive duration such as 5m", f.Duration)
	}
	out, err := createOutput(f.Out, stdout)
	if err != nil {
		return err
	}
	defer out.discard()
	hooks, err := hook.Load(ctx, f.HooksDir, hook.LoadOptions{ConfigTimeout: f.ConfigTimeout, Folder: f.HooksFolder, Warn: func(m string) { log.Warn(m) }})
	if err != nil {
		return fmt.Errorf("hooks in %s are not valid; nothing was recorded:\n%w", f.HooksDir, err)
	}
	cfg, err := kube.RESTConfig(kube.Options{Kubeconfig: f.Kube.Kubeconfig, Context: f.Kube.Context, Server: f.Kube.Server, QPS: clientQPS, Burst: clientBurst})
	if err != nil {
		return err
	}
	clients, err := kube.NewClients(cfg)
	if err != nil {
		return err
	}
	fx, err := record(ctx, clients, hooks, f.Duration, log)
	if err != nil {
		return err
	}
	if !f.ShowSecrets {
		redactSecrets(fx)
	}
	if err := fx.Write(out.w); err != nil {
		return fmt.Errorf("--out %s: %w", f.Out, err)
	}
	if err := out.commit(); err != nil {
		return err
	}
	where := f.Out
	if where == "-" {
		where = "stdout"
	}
	log.WithFields(logrus.Fields{"objects": len(fx.Objects), "events": len(fx.Events), "resources": len(fx.Resources), "out": where}).
		Infof("recorded %d objects and %d events to %s", len(fx.Objects), len(fx.Events), where)
	return nil
}

// record watches the kubernetes bindings of hooks and returns what they
// received: the objects of their Synchronization, then the events of
// duration (until ctx ends, if sooner).
func record(ctx context.Context, clients *kube.Clients, hooks []*hook.Hook, duration time.Duration, log *logrus.Logger) (*fixture.Fixture, error) {
	watched, resources, err := servedBindings(recordingHooks(hooks), clients.Resolver, log)
	if err != nil {
		return nil, err
	}
	if len(watched) == 0 {
		log.Warn("no hook has a kubernetes binding whose kind is served; the recording is empty")
	}
	rec := newRecorder(log)
	w := watch.New(clients, watched, rec, log)
	rec.expect(w.Bindings())
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if err := w.Start(watchCtx, nil); err != nil {
		return nil, err
	}
	if err := waitSynced(ctx, rec, w, log); err != nil {
		return nil, err
	}
	if duration > 0 {
		log.WithField("duration", duration).Info("every binding has synchronized; recording events")
	}
	if selectsNamespacesByLabel(watched) {
		if err := recordNamespaces(ctx, clients.Dynamic, rec); err != nil {
			return nil, err
		}
	}
	declared, err := recordKinds(ctx, clients.Dynamic, resources, rec)
	if err != nil {
		return nil, err
	}
	if duration > 0 {
		select {
		case <-ctx.Done():
			log.Info("stopped early; writing what was recorded")
		case <-time.After(duration):
		}
	}
	stopWatch()
	rec.stop()
	fx := rec.fixture()
	fx.Resources = declared
	return fx, nil
}

// waitSynced waits until every binding has delivered its Synchronization,
// logging the bindings still waiting now and then.
func waitSynced(ctx context.Context, rec *recorder, w *watch.Watcher, log *logrus.Logger) error {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case <-rec.synced:
			return nil
		case <-ctx.Done():
			return errors.New("stopped before every binding had synchronized; nothing was written")
		case <-tick.C:
			_, waiting := w.Synced()
			log.WithField("bindings", waiting).Info("waiting for the bindings' Synchronization")
		}
	}
}

// redactSecrets masks Secret data in every object and event of f.
func redactSecrets(f *fixture.Fixture) {
	mask := func(u *unstructured.Unstructured) {
		if m, ok := redact.Value(u.Object).(map[string]any); ok {
			u.Object = m
		}
	}
	for _, u := range f.Objects {
		mask(u)
	}
	for _, ev := range f.Events {
		if ev.Object != nil {
			mask(ev.Object)
		}
	}
}
