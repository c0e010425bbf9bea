package kube_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The watch client speaks HTTP/1.1 to the API server, which serves HTTP/2
// (the shared client gets it), and its connections keep TCP keepalive
// probes on: a dead peer ends a watch within 30 s. (Linux only: the
// socket options are read by their Linux names.)
func TestIntegrationWatchClientIsHTTP1(t *testing.T) {
	c := testcluster.Get(t)
	clients, err := kube.NewClients(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	var conn net.Conn
	proto := func(client *http.Client, base string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conn = i.Conn }})
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/version", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body) // the connection stays open, idle
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /version: %s", resp.Status)
		}
		return resp.Proto
	}
	base := clients.Watches.Get().AbsPath("/").URL()
	base.Path = ""
	if got := proto(clients.Watches.Client, base.String()); got != "HTTP/1.1" {
		t.Errorf("the watch client spoke %s; want HTTP/1.1", got)
	}
	keepAlive(t, conn)
	if got := proto(clients.Unversioned.Client, base.String()); got != "HTTP/2.0" {
		t.Errorf("the shared client spoke %s; want HTTP/2.0 (else this test shows nothing)", got)
	}
}

// keepAlive checks that conn, a TLS connection over TCP, probes its peer
// after 15 s of silence, every 5 s, 3 times.
func keepAlive(t *testing.T, conn net.Conn) {
	t.Helper()
	tcp := tcpConn(t, conn)
	raw, err := tcp.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int{"SO_KEEPALIVE": {unix.SOL_SOCKET, unix.SO_KEEPALIVE}, "TCP_KEEPIDLE": {unix.IPPROTO_TCP, unix.TCP_KEEPIDLE},
		"TCP_KEEPINTVL": {unix.IPPROTO_TCP, unix.TCP_KEEPINTVL}, "TCP_KEEPCNT": {unix.IPPROTO_TCP, unix.TCP_KEEPCNT}}
	wantValue := map[string]int{"SO_KEEPALIVE": 1, "TCP_KEEPIDLE": 15, "TCP_KEEPINTVL": 5, "TCP_KEEPCNT": 3}
	err = raw.Control(func(fd uintptr) {
		for name, opt := range want {
			v, err := unix.GetsockoptInt(int(fd), opt[0], opt[1])
			if err != nil || v != wantValue[name] {
				t.Errorf("the watch connection's %s is %d (%v); want %d", name, v, err, wantValue[name])
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// tcpConn returns the TCP connection under conn: TLS's, and that of the
// wrappers client-go puts around what it dials (an embedded net.Conn).
func tcpConn(t *testing.T, conn net.Conn) *net.TCPConn {
	t.Helper()
	for range 10 {
		switch c := conn.(type) {
		case *net.TCPConn:
			return c
		case *tls.Conn:
			conn = c.NetConn()
			continue
		}
		v := reflect.ValueOf(conn)
		if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
			if f := v.Elem().FieldByName("Conn"); f.IsValid() && f.CanInterface() {
				if inner, ok := f.Interface().(net.Conn); ok {
					conn = inner
					continue
				}
			}
		}
		break
	}
	t.Fatalf("no TCP connection under the watch client's %T", conn)
	return nil
}
