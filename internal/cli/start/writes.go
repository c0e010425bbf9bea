package start

import (
	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/rbac"
)

// warnUndeclaredWrites warns, under --restrict-writes, of each hook that
// seems to write (rbac.Undeclared) and declares no writes: each of its
// runs that writes will fail.
func warnUndeclaredWrites(hooks []*hook.Hook, log logrus.FieldLogger) {
	for _, u := range rbac.Undeclared(hooks) {
		log.WithFields(logrus.Fields{"hook": u.Hook.Name, "path": u.Hook.Path}).Warn(
			"--restrict-writes, and this hook declares no \"writes\" though " + u.Sign +
				": each of its runs that writes will fail, none of its operations applied; declare what it writes under \"writes\" (docs/bindings.md#writes-extension)")
	}
}
