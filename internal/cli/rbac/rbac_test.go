package rbac

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"

	"github.com/hook-operator/hook-operator/internal/cli/start"
)

// writeHook writes a bash hook into dir that prints config when asked for
// it and runs body otherwise.
func writeHook(t *testing.T, dir, name, config, body string) {
	t.Helper()
	script := "#!/usr/bin/env bash\nif [[ \"${1:-}\" == --config ]]; then echo '" + config + "'; exit 0; fi\n" + body
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// The printed RBAC marks sensitive grants with a comment line above their
// ClusterRole, and a hook that writes without declaring writes is warned
// about on stderr, by its file.
func TestRunMarksSensitiveAndWarnsOfUndeclaredWrites(t *testing.T) {
	dir := t.TempDir()
	writeHook(t, dir, "secrets.sh", `{"configVersion":"v1","schedule":[{"crontab":"* * * * *"}],"writes":[{"kind":"Secret","verbs":["create","patch"]}]}`, "exit 0\n")
	writeHook(t, dir, "quiet.sh", `{"configVersion":"v1","schedule":[{"crontab":"* * * * *"}]}`, "hook::apply \"$cm\"\n")
	var out, stderr bytes.Buffer
	log := logrus.New()
	log.SetOutput(&stderr)
	err := Run(context.Background(), Flags{HooksDir: dir, Name: "op", Namespace: "ops", ServiceAccount: "op"}, &out, log)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	mark := "# SENSITIVE: create, patch on secrets: Secrets hold credentials; create reaches any name (RBAC cannot limit it to resourceNames); needed by secrets.sh: writes[0]\n"
	i, j := strings.Index(text, mark), strings.Index(text, "kind: ClusterRole\n")
	if i < 0 || j < i || strings.Contains(text[i:j], "---") {
		t.Errorf("no %q in the ClusterRole's document, above it:\n%s", mark, text)
	}
	if strings.Count(text, "# SENSITIVE") != 1 {
		t.Errorf("want one sensitive grant marked:\n%s", text)
	}
	warn := stderr.String()
	if !strings.Contains(warn, filepath.Join(dir, "quiet.sh")) || !strings.Contains(warn, "hook::apply") || strings.Contains(warn, "secrets.sh") {
		t.Errorf("stderr %q: want a warning naming quiet.sh and hook::apply, none about secrets.sh", warn)
	}
}

// A folder with only a validating hook: the printed RBAC has nothing on
// MutatingWebhookConfigurations, marks the create it needs in managed mode,
// and in existing mode grants no create at all.
func TestRunValidatingOnly(t *testing.T) {
	dir := t.TempDir()
	writeHook(t, dir, "policy.sh", `{"configVersion":"v1","kubernetesValidating":[{"name":"policy.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}]}]}`, "")
	run := func(mode string) (string, error) {
		var out bytes.Buffer
		err := Run(context.Background(), Flags{HooksDir: dir, Name: "op", Namespace: "ops", ServiceAccount: "op",
			WebhookConfigurationName: "policy-hooks", WebhookConfigurationMode: mode}, &out, logrus.New())
		return out.String(), err
	}
	managed, err := run("managed")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(managed, "mutatingwebhookconfigurations") {
		t.Errorf("a grant on mutatingwebhookconfigurations for a validating hook:\n%s", managed)
	}
	if !strings.Contains(managed, "# SENSITIVE: create on validatingwebhookconfigurations:") {
		t.Errorf("the create on validatingwebhookconfigurations is not marked:\n%s", managed)
	}
	existing, err := run("existing")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(managed, ": create validatingwebhookconfigurations.admissionregistration.k8s.io cluster-wide\n") {
		t.Errorf("managed mode grants no create:\n%s", managed)
	}
	if strings.Contains(existing, ": create validatingwebhookconfigurations") || strings.Contains(existing, "- delete\n") ||
		!strings.Contains(existing, ": get, patch validatingwebhookconfigurations.admissionregistration.k8s.io named policy-hooks cluster-wide\n") {
		t.Errorf("existing mode:\n%s", existing)
	}
	if _, err := run("chart"); err == nil || !strings.Contains(err.Error(), "--webhook-configuration-mode=chart") {
		t.Errorf("an unknown mode: %v", err)
	}
}

// The flags that say how start runs have start's defaults, so that rbac
// without them grants what start without them needs. -o is rbac's own,
// and start's hidden flags are shell-operator's names.
func TestStartsFlagsHaveStartsDefaults(t *testing.T) {
	starts := start.New(io.Discard, logrus.New()).Flags()
	shared := 0
	New(io.Discard, logrus.New()).Flags().VisitAll(func(f *pflag.Flag) {
		s := starts.Lookup(f.Name)
		if s == nil || s.Hidden || f.Name == "output" {
			return
		}
		shared++
		if f.DefValue != s.DefValue {
			t.Errorf("--%s: default %q, start's %q", f.Name, f.DefValue, s.DefValue)
		}
	})
	if shared < 8 {
		t.Errorf("only %d flags shared with start", shared)
	}
}
