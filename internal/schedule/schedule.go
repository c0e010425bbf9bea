// Package schedule fires hooks' schedule bindings on their crontabs.
package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// parser accepts 5 fields (minute first) or 6 (seconds first), plus the
// @every/@hourly descriptors.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse parses a crontab with 5 fields, or 6 with seconds first.
func Parse(crontab string) (cron.Schedule, error) {
	s, err := parser.Parse(crontab)
	if err != nil {
		return nil, fmt.Errorf("crontab %q: %w (use 5 fields, or 6 with seconds first)", crontab, err)
	}
	return s, nil
}

// Entry is one crontab to fire.
type Entry struct {
	Crontab string
	// Fire is called at each time the crontab names. It must not block.
	Fire func(at time.Time)
}

// Run fires every entry at its times until ctx ends. Entries are parsed
// first; an invalid crontab is an error and nothing runs.
func Run(ctx context.Context, entries []Entry) error {
	c := cron.New(cron.WithParser(parser), cron.WithLocation(time.Local))
	for _, e := range entries {
		s, err := Parse(e.Crontab)
		if err != nil {
			return err
		}
		fire := e.Fire
		c.Schedule(s, cron.FuncJob(func() { fire(time.Now()) }))
	}
	c.Start()
	go func() {
		<-ctx.Done()
		c.Stop()
	}()
	return nil
}
