// Package schedule fires hooks' schedule bindings on their crontabs.
package schedule

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser accepts 5 fields (minute first) or 6 (seconds first), plus the
// @every/@hourly descriptors.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse parses a schedule binding's crontab: 5 fields (minute hour
// day-of-month month day-of-week), 6 fields with seconds first, or a
// descriptor such as "@every 30s" or "@daily", optionally preceded by
// "CRON_TZ=<zone> ". Hook validation and the scheduler both use it, so what
// validation accepts is exactly what runs.
func Parse(crontab string) (cron.Schedule, error) {
	fields := strings.Fields(crontab)
	if len(fields) > 0 && (strings.HasPrefix(fields[0], "CRON_TZ=") || strings.HasPrefix(fields[0], "TZ=")) {
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("crontab is empty")
	}
	if !strings.HasPrefix(fields[0], "@") && len(fields) != 5 && len(fields) != 6 {
		return nil, fmt.Errorf("crontab %q has %d fields; write 5 (minute hour day-of-month month day-of-week) or 6 with seconds first", crontab, len(fields))
	}
	s, err := parser.Parse(crontab)
	if err != nil {
		return nil, fmt.Errorf("crontab %q: %w; fix it (fields: [second] minute hour day-of-month month day-of-week)", crontab, err)
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
