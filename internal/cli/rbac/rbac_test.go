package rbac

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// The printed RBAC marks sensitive grants with a comment line above their
// ClusterRole, and a hook that writes without declaring writes is warned
// about on stderr, by its file.
func TestRunMarksSensitiveAndWarnsOfUndeclaredWrites(t *testing.T) {
	dir := t.TempDir()
	hook := func(name, config, body string) {
		script := "#!/usr/bin/env bash\nif [[ \"${1:-}\" == --config ]]; then echo '" + config + "'; exit 0; fi\n" + body
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hook("secrets.sh", `{"configVersion":"v1","schedule":[{"crontab":"* * * * *"}],"writes":[{"kind":"Secret","verbs":["create","patch"]}]}`, "exit 0\n")
	hook("quiet.sh", `{"configVersion":"v1","schedule":[{"crontab":"* * * * *"}]}`, "hook::apply \"$cm\"\n")
	var out, stderr bytes.Buffer
	log := logrus.New()
	log.SetOutput(&stderr)
	err := Run(context.Background(), Flags{HooksDir: dir, Name: "op", Namespace: "ops", ServiceAccount: "op"}, &out, log)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	mark := "# SENSITIVE: patch on secrets: Secrets hold credentials; needed by secrets.sh: writes[0]\n"
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
