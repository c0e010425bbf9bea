package rbac

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// writeSigns are what, in a hook's file, shows that it writes operations:
// the bash helpers that write one, the file the operations go to (which a
// script names and a Go hook built with the SDK holds), and kubectl's
// writing verbs.
var writeSigns = []string{
	"hook::apply", "hook::create", "hook::merge_patch", "hook::json_patch", "hook::jq_patch",
	"hook::delete", "hook::status", "hook::emit", "KUBERNETES_PATCH_PATH",
	"kubectl apply", "kubectl create", "kubectl patch", "kubectl delete", "kubectl replace",
	"kubectl label", "kubectl annotate", "kubectl scale",
}

// maxScan bounds how much of a hook's file is read for writeSigns: a Go
// hook is a binary of tens of megabytes.
const maxScan = 256 << 20

// UndeclaredWrites returns a warning for each hook whose bindings or file
// suggest that it writes objects while its configuration declares no
// `writes`: the RBAC generated for it lets it write nothing, so its
// operations would be refused at run time. Each names the hook's file and
// what suggests a write.
func UndeclaredWrites(hooks []*hook.Hook) []string {
	var out []string
	for _, u := range Undeclared(hooks) {
		out = append(out, fmt.Sprintf("%s: %s, but its configuration declares no \"writes\": the RBAC below lets it write nothing, "+
			"so its operations would be refused; declare what it writes under \"writes\" (docs/bindings.md#writes-extension)", u.Hook.Path, u.Sign))
	}
	return out
}

// UndeclaredHook is a hook that seems to write and declares no writes.
type UndeclaredHook struct {
	Hook *hook.Hook
	// Sign says what suggests a write, such as "the hook's file uses
	// kubectl apply".
	Sign string
}

// Undeclared returns the hooks whose bindings or file suggest that they
// write objects while their configurations declare no `writes`.
func Undeclared(hooks []*hook.Hook) []UndeclaredHook {
	var out []UndeclaredHook
	for _, h := range hooks {
		if len(h.Config.Writes) > 0 {
			continue
		}
		sign := bindingSign(h)
		if sign == "" {
			sign = fileSign(h.Path)
		}
		if sign != "" {
			out = append(out, UndeclaredHook{Hook: h, Sign: sign})
		}
	}
	return out
}

// bindingSign says which binding of h shows that it writes, or "".
func bindingSign(h *hook.Hook) string {
	for _, b := range h.Config.Kubernetes {
		if b.ExecuteHookOnOwnStatusChange {
			return fmt.Sprintf("its binding %q sets executeHookOnOwnStatusChange, so the hook writes status", b.Name)
		}
	}
	return ""
}

// fileSign says what in the file at path shows that the hook writes, or "".
func fileSign(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScan))
	if err != nil {
		return ""
	}
	if bytes.HasPrefix(data, []byte("#!")) {
		data = withoutComments(data)
	}
	for _, s := range writeSigns {
		if bytes.Contains(data, []byte(s)) {
			return fmt.Sprintf("the hook's file uses %s", s)
		}
	}
	return ""
}

// withoutComments drops a script's comment lines, whose examples
// ("#   kubectl create configmap ...") are no writes.
func withoutComments(script []byte) []byte {
	var out []byte
	for line := range bytes.Lines(script) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}
