package logging

import (
	"fmt"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// RouteKlog sends what client-go logs through klog to l, so that every line
// of the process has the format --log-format chose (client-go otherwise
// writes klog's own text lines to stderr). client-go's messages come at
// debug level with the field source=client-go, its errors as warnings:
// the runtime logs what matters about the same events itself ("watch
// failed; retrying"). Verbose (V > 0) messages are dropped.
func RouteKlog(l logrus.FieldLogger) {
	klog.SetLogger(logr.New(&klogSink{log: l.WithField("source", "client-go")}))
}

// klogSink is a logr.LogSink over logrus.
type klogSink struct {
	log  logrus.FieldLogger
	name string
}

func (s *klogSink) Init(logr.RuntimeInfo) {}

func (s *klogSink) Enabled(level int) bool { return level <= 0 }

func (s *klogSink) entry(kv []any) logrus.FieldLogger {
	l := s.log
	if s.name != "" {
		l = l.WithField("logger", s.name)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		l = l.WithField(fmt.Sprint(kv[i]), fmt.Sprint(kv[i+1]))
	}
	return l
}

func (s *klogSink) Info(_ int, msg string, kv ...any) { s.entry(kv).Debug(msg) }

func (s *klogSink) Error(err error, msg string, kv ...any) {
	s.entry(kv).WithError(err).Warn(msg)
}

func (s *klogSink) WithValues(kv ...any) logr.LogSink {
	return &klogSink{log: s.entry(kv), name: s.name}
}

func (s *klogSink) WithName(name string) logr.LogSink {
	n := name
	if s.name != "" {
		n = s.name + "/" + name
	}
	return &klogSink{log: s.log, name: n}
}
