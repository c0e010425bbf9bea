// Package logging configures the process-wide logrus logger from the
// --log-level and --log-format settings.
package logging

import (
	"fmt"
	"io"
	"strings"

	"github.com/sirupsen/logrus"
)

// Formats lists the accepted values of --log-format.
var Formats = []string{"text", "json"}

// Configure makes l write to out at the given level ("trace", "debug",
// "info", "warn", "error") in the given format ("text" or "json"). Errors say
// which values are accepted; l is left unchanged then. noTime leaves the
// time out of each line.
func Configure(l *logrus.Logger, level, format string, noTime bool, out io.Writer) error {
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return fmt.Errorf("log level %q: use one of trace, debug, info, warn, error", level)
	}
	switch strings.ToLower(format) {
	case "text", "json":
	default:
		return fmt.Errorf("log format %q: use one of %s", format, strings.Join(Formats, ", "))
	}
	l.SetOutput(out)
	l.SetLevel(lvl)
	// Wrapped so that control characters from hooks are escaped (escape.go).
	switch strings.ToLower(format) {
	case "text":
		t := &logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "2006-01-02T15:04:05.000Z07:00", DisableTimestamp: noTime}
		l.SetFormatter(escapeText(t, l))
	case "json":
		l.SetFormatter(escapedJSON{&logrus.JSONFormatter{TimestampFormat: "2006-01-02T15:04:05.000Z07:00", DisableTimestamp: noTime}})
	}
	return nil
}
