package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestMain makes the test process the reaper of its hooks' orphans, as
// `hook-operator start` makes the operator (Subreap).
func TestMain(m *testing.M) {
	if dir := os.Getenv(homeHelperEnv); dir != "" {
		homeHelper(dir) // never returns
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	if err := Subreap(ctx, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	os.Exit(code)
}
