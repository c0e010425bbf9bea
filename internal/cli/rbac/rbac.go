// Package rbac implements `hook-operator rbac`: print the least-privilege
// RBAC of the operator for a hooks folder.
package rbac

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	hookscmd "github.com/hook-operator/hook-operator/internal/cli/hooks"
	"github.com/hook-operator/hook-operator/internal/election"
	"github.com/hook-operator/hook-operator/internal/fixture"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/rbac"
	"github.com/hook-operator/hook-operator/internal/replay"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// Flags hold the command's settings.
type Flags struct {
	HooksDir       string
	ConfigTimeout  time.Duration
	CRDs           string
	Kubeconfig     string
	Name           string
	Namespace      string
	ServiceAccount string
	// WebhookConfigurationName is start's --webhook-configuration-name.
	WebhookConfigurationName string
	// WebhookConfigurationMode is start's --webhook-configuration-mode.
	WebhookConfigurationMode string
	// WebhookCertSecret is start's --webhook-cert-secret when it runs with
	// --webhook-self-signed; "" otherwise.
	WebhookCertSecret string
	// LeaseName is start's --leader-elect-lease-name when it runs with
	// --leader-elect; "" otherwise.
	LeaseName string
	// Sharding is start's --sharding.
	Sharding bool
	// HooksFolder is --hooks-allow-external-symlinks.
	HooksFolder hook.FolderOptions
	// Output is -o: OutputYAML ("" too) or OutputValues.
	Output string
}

// The formats of -o.
const (
	// OutputYAML prints the ClusterRole, Roles and bindings.
	OutputYAML = "yaml"
	// OutputValues prints values of the Helm chart (deploy/helm/hook-operator)
	// for `helm install -f`.
	OutputValues = "values"
)

// chartIgnores are the flags that values leave to the chart's own values:
// it names and binds the roles after the release, and grants the Leases
// and the certificate Secret by itself.
var chartIgnores = []string{"name", "namespace", "service-account", "webhook-self-signed", "webhook-cert-secret", "leader-elect", "leader-elect-lease-name"}

// New returns the rbac command.
func New(stdout io.Writer, log *logrus.Logger) *cobra.Command {
	var f Flags
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Print the least-privilege RBAC the operator needs for a hooks folder",
		Long: `rbac prints, as YAML, the ClusterRole and Roles (with their bindings to the
operator's ServiceAccount) that the hooks under --hooks-dir need, and nothing
more:

  - get, list and watch on what each kubernetes binding watches: in the
    namespaces of its namespace.nameSelector (a Role each), else cluster-wide;
    list and watch on Namespaces when a binding selects them by label;
  - update on the objects of bindings with a finalizer;
  - the writes each hook declares in its configuration under "writes"
    (kind, optional subresource, verbs, optional namespaces; see
    docs/hooks.md): the runtime cannot know in advance what operations a hook
    will write;
  - create and patch on Events, for the Events about failed runs;
  - for admission bindings, the webhook configurations of the kinds the
    hooks use (validating bindings only: nothing on mutating ones): get,
    patch and delete of --webhook-configuration-name, and create, which
    RBAC cannot limit to a name; with --webhook-configuration-mode=existing
    (the configurations are made beforehand, by the chart) only get and
    patch of that name; for conversion bindings, get and patch on the CRDs
    they name, and list on CRDs; with --webhook-self-signed, the
    certificate Secret in --namespace.

No rule uses "*". Kinds resolve offline, from Kubernetes' built-in kinds and
the CustomResourceDefinitions in --crds; with --kubeconfig, from the
cluster's discovery instead. A comment above the YAML says which binding or
write needs each permission.

With -o values it prints values of the Helm chart (deploy/helm/hook-operator)
instead, for helm install -f (docs/deploy.md, "With Helm"): the rules in
rbac.extraRules (cluster-wide) and rbac.namespaceRules (namespace -> rules),
leaving out what the chart grants by itself from its own values (Events,
the webhook configurations, the certificate Secret, the Leases), and
webhook.enabled for admission or conversion bindings. Of the flags that
describe start, only --webhook-configuration-name, --webhook-configuration-mode
(when given) and --sharding become values; the chart names the roles, the
Lease and the Secret after the release.

Sensitive grants are marked with a "# SENSITIVE: ..." line above their
ClusterRole or Role: create, update, patch or delete (and bind, escalate) on
Secrets, Namespaces, Nodes, webhook configurations and admission policies,
CRDs, RBAC objects, CSRs and APIServices, and any verb on "*". Review those
before applying.

A hook whose file uses the bash helpers that write (hook::apply ...),
KUBERNETES_PATCH_PATH or a writing kubectl verb, or whose binding sets
executeHookOnOwnStatusChange, but whose configuration declares no "writes",
gets a warning on stderr naming its file: the RBAC printed would let it
write nothing.`,
		Example: `  hook-operator rbac --hooks-dir ./hooks --crds ./deploy/crds > rbac.yaml
  hook-operator rbac --hooks-dir /hooks --kubeconfig ~/.kube/config --namespace ops --service-account my-operator
  hook-operator rbac --hooks-dir ./hooks --crds ./crds -o values | helm install ops deploy/helm/hook-operator -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Run(cmd.Context(), f, stdout, log)
		},
	}
	fs := cmd.Flags()
	hookscmd.BindHooksDir(fs, &f.HooksDir)
	hookscmd.BindConfigTimeout(fs, &f.ConfigTimeout)
	hookscmd.BindFolder(fs, &f.HooksFolder)
	fs.StringVar(&f.CRDs, "crds", "", "file or folder of CustomResourceDefinitions that define the hooks' custom kinds")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "resolve kinds with this cluster's discovery instead of offline")
	fs.StringVar(&f.Name, "name", "hook-operator", "name of the ClusterRole, Roles and bindings")
	fs.StringVar(&f.Namespace, "namespace", "hook-operator", "namespace of the operator's ServiceAccount")
	fs.StringVar(&f.ServiceAccount, "service-account", "hook-operator", "the operator's ServiceAccount")
	fs.StringVar(&f.WebhookConfigurationName, "webhook-configuration-name", webhook.DefaultConfigurationName, "the webhook configurations the operator may change (start's --webhook-configuration-name)")
	fs.StringVar(&f.WebhookConfigurationMode, "webhook-configuration-mode", webhook.ModeManaged, "start's --webhook-configuration-mode: managed (grants create) or existing (get, patch by name)")
	var selfSigned bool
	fs.BoolVar(&selfSigned, "webhook-self-signed", false, "start runs with --webhook-self-signed: grant its certificate Secret in --namespace")
	fs.StringVar(&f.WebhookCertSecret, "webhook-cert-secret", webhook.DefaultCertSecret, "start's --webhook-cert-secret")
	var leaderElect bool
	fs.BoolVar(&leaderElect, "leader-elect", false, "start runs with --leader-elect: grant its Lease in --namespace")
	fs.BoolVar(&f.Sharding, "sharding", false, "start runs with --sharding: grant the Leases of the sharding ring and the leader's in --namespace")
	fs.StringVar(&f.LeaseName, "leader-elect-lease-name", election.DefaultLeaseName, "start's --leader-elect-lease-name")
	fs.StringVarP(&f.Output, "output", "o", OutputYAML, "yaml (the ClusterRole, Roles and bindings) or values (the Helm chart's values, for helm install -f)")
	cmd.PreRun = func(*cobra.Command, []string) {
		if f.Output == OutputValues {
			// The chart's defaults stand unless these are given.
			if !fs.Changed("webhook-configuration-name") {
				f.WebhookConfigurationName = ""
			}
			if !fs.Changed("webhook-configuration-mode") {
				f.WebhookConfigurationMode = ""
			}
			var ignored []string
			for _, name := range chartIgnores {
				if fs.Changed(name) {
					ignored = append(ignored, "--"+name)
				}
			}
			if len(ignored) > 0 {
				log.Warnf("%s: not used with -o values: the chart names the roles, the Lease and the certificate Secret after the release, and grants the last two by itself", strings.Join(ignored, ", "))
			}
		}
		if !selfSigned {
			f.WebhookCertSecret = ""
		}
		if !leaderElect && !f.Sharding {
			f.LeaseName = ""
		}
	}
	return cmd
}

// Run loads the hooks and prints their RBAC.
func Run(ctx context.Context, f Flags, out io.Writer, log *logrus.Logger) error {
	if err := webhook.CheckConfigurationMode(f.WebhookConfigurationMode); err != nil {
		return err
	}
	if f.Output != "" && f.Output != OutputYAML && f.Output != OutputValues {
		return fmt.Errorf("-o %s: use %s (the RBAC objects) or %s (the Helm chart's values)", f.Output, OutputYAML, OutputValues)
	}
	hooks, err := hook.Load(ctx, f.HooksDir, hook.LoadOptions{ConfigTimeout: f.ConfigTimeout, Folder: f.HooksFolder, Warn: func(m string) { log.Warn(m) }})
	if err != nil {
		return fmt.Errorf("hooks in %s are not valid:\n%w", f.HooksDir, err)
	}
	resolver, err := resolverFor(f)
	if err != nil {
		return err
	}
	opts := rbac.GrantOptions{WebhookConfigurationName: f.WebhookConfigurationName, WebhookConfigurationMode: f.WebhookConfigurationMode,
		WebhookCertSecret: f.WebhookCertSecret, OperatorNamespace: f.Namespace, LeaseName: f.LeaseName, Sharding: f.Sharding}
	if f.Output == OutputValues {
		opts = chartGrantOptions(f)
	}
	grants, err := rbac.Grants(hooks, resolver, opts)
	if err != nil {
		return err
	}
	for _, w := range rbac.UndeclaredWrites(hooks) {
		log.Warn(w)
	}
	if f.Output == OutputValues {
		return printValues(out, f, hooks, grants)
	}
	fmt.Fprintf(out, "# The least-privilege RBAC of hook-operator for the hooks in %s,\n", f.HooksDir)
	fmt.Fprintln(out, "# written by `hook-operator rbac`. What needs what:")
	for _, g := range grants {
		fmt.Fprintf(out, "#   %s\n", describe(g))
	}
	for _, obj := range rbac.Objects(grants, rbac.Options{Name: f.Name, Namespace: f.Namespace, ServiceAccount: f.ServiceAccount}) {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		fmt.Fprint(out, "---\n")
		markSensitive(out, obj, grants)
		fmt.Fprintf(out, "%s", data)
	}
	return nil
}

// describe says what needs a grant, and what it grants where.
func describe(g rbac.Grant) string {
	where := "cluster-wide"
	if g.Namespace != "" {
		where = "in " + g.Namespace
	}
	res, sub, _ := strings.Cut(g.Resource, "/")
	if g.Group != "" {
		res += "." + g.Group
	}
	if sub != "" {
		res += "/" + sub
	}
	if len(g.ResourceNames) > 0 {
		res += " named " + strings.Join(g.ResourceNames, ", ")
	}
	return fmt.Sprintf("%s: %s %s %s", g.Why, strings.Join(g.Verbs, ", "), res, where)
}

// markSensitive writes a comment line above a ClusterRole or Role for each
// of its grants that rbac.Sensitive flags, saying why and what needs it.
func markSensitive(out io.Writer, obj any, grants []rbac.Grant) {
	var namespace string
	switch o := obj.(type) {
	case *rbac.ClusterRole:
	case *rbac.Role:
		namespace = o.Namespace
	default:
		return
	}
	for _, g := range grants {
		if line := sensitive(g); line != "" && g.Namespace == namespace {
			fmt.Fprintln(out, line)
		}
	}
}

// sensitive returns the "# SENSITIVE: ..." line of a grant that
// rbac.Sensitive flags, or "".
func sensitive(g rbac.Grant) string {
	why := rbac.Sensitive(g)
	if why == "" {
		return ""
	}
	names := ""
	if len(g.ResourceNames) > 0 {
		names = " (only " + strings.Join(g.ResourceNames, ", ") + ")"
	}
	return fmt.Sprintf("# SENSITIVE: %s%s; needed by %s", why, names, g.Why)
}

func resolverFor(f Flags) (rbac.Resolver, error) {
	if f.Kubeconfig != "" {
		cfg, err := kube.RESTConfig(kube.Options{Kubeconfig: f.Kubeconfig})
		if err != nil {
			return nil, err
		}
		clients, err := kube.NewClients(cfg)
		if err != nil {
			return nil, err
		}
		return clients.Resolver, nil
	}
	fx := &fixture.Fixture{}
	if f.CRDs != "" {
		var err error
		if fx, err = fixture.ReadObjects(f.CRDs); err != nil {
			return nil, fmt.Errorf("--crds: %w", err)
		}
	}
	return replay.Resolver(fx)
}
