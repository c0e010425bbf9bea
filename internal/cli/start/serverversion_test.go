package start

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"k8s.io/client-go/rest"

	"github.com/hook-operator/hook-operator/internal/kube"
)

// start logs the API server's version, and warns below the oldest tested.
func TestServerVersionLogged(t *testing.T) {
	for _, tc := range []struct {
		answer string
		level  logrus.Level
		says   string
	}{
		{`{"major":"1","minor":"31","gitVersion":"v1.31.13"}`, logrus.InfoLevel, "connected to the cluster"},
		{`{"major":"1","minor":"30","gitVersion":"v1.30.9"}`, logrus.WarnLevel, "older than v1.31, the oldest this release is tested on; see docs/compatibility.md"},
		{`not json`, logrus.WarnLevel, "did not say its version"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(tc.answer)) }))
		clients, err := kube.NewClients(&rest.Config{Host: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		log, hook := logtest.NewNullLogger()
		serverVersion(clients.Preconnect(context.Background()), srv.URL, log)
		srv.Close()
		e := hook.LastEntry()
		if e == nil || e.Level != tc.level || !strings.Contains(e.Message, tc.says) || e.Data["server"] != srv.URL {
			t.Errorf("answer %s: logged %+v; want %s %q", tc.answer, e, tc.level, tc.says)
		}
	}
}
