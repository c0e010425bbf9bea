package conformance_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// webhookExample is one of shell-operator's webhook examples, run by
// hook-operator alone: shell-operator registers webhooks only by Service,
// which the local API server (a process outside any cluster network)
// cannot reach, so there is no reference run to compare with; each example
// is checked against what its README says it does.
type webhookExample struct {
	name  string
	hooks []string
	// check applies the example's objects (in namespace ns, its CRD's group
	// renamed to group) and checks the outcome; it may be tried again.
	check func(kube kubeFunc, examples, ns, group string) error
}

// kubeFunc runs kubectl with stdin and returns its output.
type kubeFunc func(stdin string, args ...string) (string, error)

var webhookExamples = []webhookExample{
	{"204-validating-webhook", []string{"validating.sh"}, func(kube kubeFunc, examples, ns, group string) error {
		// A server-side dry run goes through admission and creates nothing,
		// so it can be tried again until the webhook is in place.
		out, err := kube(manifest(examples, "204-validating-webhook/crontab-non-valid.yaml", group), "create", "--dry-run=server", "-n", ns, "-f", "-")
		if err == nil || !strings.Contains(out, "Only images from repo.example.com are allowed") {
			return fmt.Errorf("the non-valid CronTab: %v\n%s; want the hook's denial", err, out)
		}
		if out, err := kube(manifest(examples, "204-validating-webhook/crontab-valid.yaml", group), "apply", "-n", ns, "-f", "-"); err != nil {
			return fmt.Errorf("the valid CronTab: %v\n%s", err, out)
		}
		return nil
	}},
	{"206-mutating-webhook", []string{"mutating.sh"}, func(kube kubeFunc, examples, ns, group string) error {
		cr := manifest(examples, "206-mutating-webhook/crontab-valid.yaml", group)
		if out, err := kube(cr, "create", "--dry-run=server", "-n", ns, "-f", "-", "-o", "jsonpath={.spec.replicas}"); err != nil || out != "333" {
			return fmt.Errorf("a dry-run create: spec.replicas %q (%v), want 333 from the hook's patch", out, err)
		}
		if out, err := kube(cr, "apply", "-n", ns, "-f", "-"); err != nil {
			return fmt.Errorf("the CronTab: %v\n%s", err, out)
		}
		if out, err := kube("", "get", "-n", ns, "crontabs."+group, "crontab-valid", "-o", "jsonpath={.spec.replicas}"); err != nil || out != "333" {
			return fmt.Errorf("the stored CronTab: spec.replicas %q (%v), want 333", out, err)
		}
		return nil
	}},
	{"210-conversion-webhook", []string{"conversion-alpha.sh"}, func(kube kubeFunc, examples, ns, group string) error {
		if out, err := kube(manifest(examples, "210-conversion-webhook/crontab-v1alpha1.yaml", group), "apply", "-n", ns, "-f", "-"); err != nil {
			return fmt.Errorf("the v1alpha1 CronTab: %v\n%s", err, out)
		}
		out, err := kube("", "get", "-n", ns, "crontabs.v1alpha2."+group, "crontab-v1alpha1", "-o", "jsonpath={.apiVersion} {.spec.cron}")
		if err != nil || out != group+"/v1alpha2 * * * * */5" {
			return fmt.Errorf("read as v1alpha2: %q (%v), want the cron fields joined by the hook", out, err)
		}
		return nil
	}},
}

// manifest reads an example's file with its group renamed.
func manifest(examples, file, group string) string {
	data, err := os.ReadFile(filepath.Join(examples, file))
	if err != nil {
		return err.Error()
	}
	return strings.ReplaceAll(string(data), "stable.example.com", group)
}

// shell-operator's own webhook examples (validating, mutating, conversion),
// their hooks unchanged on its shell framework, served by hook-operator
// against the local API server (registered by URL, with a self-signed
// certificate). Each example's CRD group is renamed, so that they and the
// conformance cases never share a CRD, and its namespace selector
// (name: example-NNN) is met by a label on the test's namespace.
func TestIntegrationWebhookExamples(t *testing.T) {
	c := testcluster.Get(t)
	module := moduleDir(t)
	examples := filepath.Join(module, "examples")
	bin := buildOurs(t)
	for _, ex := range webhookExamples {
		t.Run(ex.name, func(t *testing.T) {
			ns := c.Namespace(t)
			number := strings.SplitN(ex.name, "-", 2)[0]
			group := "ex" + number + "-" + ns + ".conformance.example.com"
			var kube kubeFunc = func(stdin string, args ...string) (string, error) {
				cmd := exec.Command("kubectl", append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
				cmd.Stdin = strings.NewReader(stdin)
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			if out, err := kube("", "label", "namespace", ns, "name=example-"+number); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			crd := manifest(examples, ex.name+"/templates/crd/crontab.yaml", group)
			if out, err := kube(crd, "apply", "-f", "-"); err != nil {
				t.Fatalf("the example's CRD: %v\n%s", err, out)
			}
			t.Cleanup(func() { _, _ = kube("", "delete", "crd", "crontabs."+group, "--wait=false") })
			if out, err := kube("", "wait", "--for", "condition=established", "crd/crontabs."+group); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}

			rec := newRecorder(t)
			hooks := hooksFolder(t, &Case{Example: ex.name, Hooks: ex.hooks, Framework: true}, module, rec.dir)
			rewriteTree(t, hooks, "stable.example.com", group)
			port := testoperator.FreePort(t)
			configName := "conformance-" + ns
			stop := startProcess(t, bin, []string{"start", "--hooks-dir", hooks, "--kubeconfig", c.Kubeconfig,
				"--listen-address", "127.0.0.1:0", "--health-listen-address", "127.0.0.1:0", "--debug-socket", "", "--log-format", "json",
				"--webhook-listen-address", "127.0.0.1:" + port, "--webhook-url", "https://127.0.0.1:" + port,
				"--webhook-self-signed", "--operator-namespace", ns, "--webhook-configuration-name", configName},
				// 210's hook sources $FRAMEWORK_DIR/shell_lib.sh, which is
				// /shell_lib.sh in shell-operator's image, where the
				// variable is not set.
				[]string{"FRAMEWORK_DIR=" + filepath.Join(hooks, ".framework")})
			t.Cleanup(func() {
				stop()
				_, _ = kube("", "delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", configName, "--ignore-not-found")
			})
			// The registration reaches the API server within a moment.
			deadline := time.Now().Add(time.Minute)
			for {
				err := ex.check(kube, examples, ns, group)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %v", ex.name, err)
				}
				time.Sleep(500 * time.Millisecond)
			}
		})
	}
}
