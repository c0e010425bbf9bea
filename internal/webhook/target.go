package webhook

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// servicePort is the port of the Service that the registrations name (the
// API server's default, and shell-operator's).
const servicePort = 443

// defaultServiceName is --webhook-service-name's default.
const defaultServiceName = "hook-operator-webhook"

var servicesResource = schema.GroupVersionResource{Version: "v1", Resource: "services"}

// target is where one kind of registration sends the API server: a
// Service of Namespace, or a URL, which should reach the listener that
// serves that kind of review on port.
type target struct {
	// what names the reviews (admission, conversion); settings the
	// settings that choose the Service or URL, for messages.
	what, settings    string
	service, url      string
	namespace         string
	port, otherPort   int
	otherWhat         string
	shellOperatorName string
}

// targets are where the registrations just made point: the admission
// listener's for admission bindings, the conversion listener's (the
// admission listener without a second one) for conversions.
func (s *Server) targets(admission, conversion bool) []target {
	var out []target
	if admission && s.admissionPort != 0 {
		t := target{what: "admission", settings: "--webhook-service-name (shell-operator's VALIDATING_WEBHOOK_SERVICE_NAME)", service: s.o.ServiceName, url: s.o.URL,
			namespace: s.o.Namespace, port: s.admissionPort, shellOperatorName: "shell-operator-validating-svc"}
		if s.o.URL != "" {
			t.settings = "--webhook-url"
		}
		if s.separate {
			t.otherPort, t.otherWhat = s.conversionPort, "conversion"
		}
		out = append(out, t)
	}
	if conversion {
		t := target{what: "conversion", settings: "--webhook-service-name (shell-operator's VALIDATING_WEBHOOK_SERVICE_NAME)", service: s.o.ServiceName, url: s.o.URL,
			namespace: s.o.Namespace, port: s.admissionPort}
		if s.separate {
			t.service, t.url, t.port = s.conv.ServiceName, s.conv.URL, s.conversionPort
			t.settings, t.shellOperatorName = "--conversion-webhook-service-name (shell-operator's CONVERSION_WEBHOOK_SERVICE_NAME)", "shell-operator-conversion-svc"
			t.otherPort, t.otherWhat = s.admissionPort, "admission"
		}
		if t.url != "" {
			t.settings = "--conversion-webhook-url"
		}
		if t.port != 0 {
			out = append(out, t)
		}
	}
	return out
}

// checkTargets says what is wrong with where the registrations point, one
// message per fault, each naming the Service or URL and what to set; nil
// when each reaches its listener as far as can be seen from here. A
// Service the operator may not read is not judged (logged at info).
func (s *Server) checkTargets(ctx context.Context, targets []target) []string {
	var problems []string
	for _, t := range targets {
		var msg string
		if t.url != "" {
			msg = t.checkURL()
		} else {
			msg = s.checkService(ctx, t)
		}
		if msg != "" {
			problems = append(problems, msg)
		}
	}
	return problems
}

// checkURL judges a URL whose host is this machine (an IP address of one
// of its interfaces, or localhost): its port must be that of the listener
// serving t's reviews. A URL of another host may reach the listener
// through a forwarded port, and is not judged.
func (t target) checkURL() string {
	u, err := url.Parse(t.url)
	if err != nil || !isLocalHost(u.Hostname()) {
		return ""
	}
	port := servicePort
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return ""
		}
	}
	if port == t.port {
		return ""
	}
	what := "no webhook listener"
	if port == t.otherPort && t.otherWhat != "" {
		what = "the " + t.otherWhat + " listener, which does not serve " + t.what + " reviews"
	}
	return fmt.Sprintf("%s reviews are registered at %s, and port %d of this host is %s: the %s listener serves on port %d; set %s to https://%s",
		t.what, t.url, port, what, t.what, t.port, t.settings, net.JoinHostPort(u.Hostname(), strconv.Itoa(t.port)))
}

// isLocalHost reports whether host names this machine.
func isLocalHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	return slices.ContainsFunc(addrs, func(a net.Addr) bool {
		n, ok := a.(*net.IPNet)
		return ok && n.IP.Equal(ip)
	})
}

// checkService judges the Service t names: it must exist, have port 443,
// and, where its target port is a number, target the listener's port.
func (s *Server) checkService(ctx context.Context, t target) string {
	if t.service == "" || t.namespace == "" || s.o.Dynamic == nil {
		return ""
	}
	name := t.namespace + "/" + t.service
	svc, err := s.o.Dynamic.Resource(servicesResource).Namespace(t.namespace).Get(ctx, t.service, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		hint := ""
		if t.service == defaultServiceName && t.shellOperatorName != "" {
			hint = fmt.Sprintf(" (shell-operator's default name was %s; hook-operator's is %s)", t.shellOperatorName, defaultServiceName)
		}
		return fmt.Sprintf("%s reviews are registered through the Service %s, which does not exist, so the API server cannot reach them%s: create it (port %d, targetPort %d, selecting the operator's Pods) or set %s to the Service in front of the operator",
			t.what, name, hint, servicePort, t.port, t.settings)
	case apierrors.IsForbidden(err):
		s.log.WithField("service", name).Infof("cannot check that the webhook Service exists and targets port %d: the operator may not get it (a Role granting get on services named %s would let it)", t.port, t.service)
		return ""
	case err != nil:
		s.log.WithError(err).WithField("service", name).Warn("cannot check the webhook Service; trying again at the next change")
		return ""
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	for _, p := range ports {
		pm, _ := p.(map[string]any)
		if port, _ := pm["port"].(int64); port != servicePort {
			continue
		}
		switch tp := pm["targetPort"].(type) {
		case int64:
			if int(tp) != t.port {
				return fmt.Sprintf("%s reviews are registered through the Service %s, whose port %d targets port %d, and the %s listener serves on port %d: set the Service's targetPort to %d",
					t.what, name, servicePort, tp, t.what, t.port, t.port)
			}
		case nil:
			if t.port != servicePort {
				return fmt.Sprintf("%s reviews are registered through the Service %s, whose port %d sets no targetPort (so targets %d), and the %s listener serves on port %d: set the Service's targetPort to %d",
					t.what, name, servicePort, servicePort, t.what, t.port, t.port)
			}
		}
		return "" // a named target port is the Pod's to resolve
	}
	have := "none"
	if len(ports) > 0 {
		var list []string
		for _, p := range ports {
			pm, _ := p.(map[string]any)
			list = append(list, fmt.Sprint(pm["port"]))
		}
		have = strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s reviews are registered through the Service %s on port %d, and it has no port %d (it has %s): add port %d with targetPort %d to it",
		t.what, name, servicePort, servicePort, have, servicePort, t.port)
}

// reportTargets checks where the registrations point and, when what it
// finds changed, logs each fault as a warning and tells Options.Misdirected
// (an Event on the Pod, and readiness). It returns whether a fault is
// left, to be checked again.
func (s *Server) reportTargets(ctx context.Context, targets []target) bool {
	problems := s.checkTargets(ctx, targets)
	key := strings.Join(problems, "\n")
	if key != s.targetWarning {
		s.targetWarning = key
		for _, p := range problems {
			s.log.Warn("webhook registration: " + p)
		}
		if len(problems) == 0 && len(targets) > 0 {
			s.log.Info("webhook registration: the registrations reach the listeners again")
		}
		if s.o.Misdirected != nil {
			s.o.Misdirected(problems)
		}
	}
	return len(problems) > 0
}
