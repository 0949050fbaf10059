package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// timeRange is a one-shot command's time range as given on its command
// line: --start and --end, as Prometheus's HTTP API (and its admin API's
// delete_series) and promtool name a range. Commands embed it.
type timeRange struct {
	start, end string
}

// flags defines the range's flags on cmd: --start and --end, and as hidden
// aliases --from and --to, the names compact, rollup and reindex took
// before, so that scripts written for them keep working. Each pair writes
// the same field (kingpin sets the defaults first, then the flags given;
// of two given, the last wins). With required, the command fails at parse
// time without --start or --from (kingpin's Required would refuse --from).
// It returns the --start flag, for a default.
func (r *timeRange) flags(cmd *kingpin.CmdClause, startHelp, endHelp string, required bool) *kingpin.FlagClause {
	if required {
		startHelp += " Required."
		cmd.Validate(func(*kingpin.CmdClause) error {
			if r.start == "" {
				return errors.New("required flag '--start' not provided")
			}
			return nil
		})
	}
	f := cmd.Flag("start", startHelp)
	f.StringVar(&r.start)
	cmd.Flag("from", "Alias of --start.").Hidden().StringVar(&r.start)
	cmd.Flag("end", endHelp).StringVar(&r.end)
	cmd.Flag("to", "Alias of --end.").Hidden().StringVar(&r.end)
	return f
}

// hourFlags defines the required range of a command that works on whole
// hours (compact, rollup, reindex): done says what becomes of the hour
// holding --start ("compacted"), and endedOnly that hours that have not
// ended are skipped.
func (r *timeRange) hourFlags(cmd *kingpin.CmdClause, done string, endedOnly bool) {
	endHelp := "End (inclusive): RFC 3339, or Unix seconds or milliseconds; default now."
	if endedOnly {
		endHelp += " Hours that have not ended are skipped."
	}
	r.flags(cmd, "Start: RFC 3339, or Unix seconds or milliseconds; the hour holding it is the first "+done+".", endHelp, true)
}

// hourCmd is a command over a range of whole hours, hours that have not
// ended skipped, that works on several at once: compact and rollup.
type hourCmd struct {
	cmd *kingpin.CmdClause
	timeRange
	concurrency int
}

// register defines the command name with its help, its range (done as
// for hourFlags) and its --concurrency flag.
func (c *hourCmd) register(app *kingpin.Application, name, help, done, concurrencyHelp, concurrencyDefault string) {
	c.cmd = app.Command(name, help)
	c.hourFlags(c.cmd, done, true)
	c.cmd.Flag("concurrency", concurrencyHelp).Default(concurrencyDefault).IntVar(&c.concurrency)
}

// parse returns the range in Unix milliseconds (end defaults to now), and
// checks its order.
func (r *timeRange) parse() (from, to int64, err error) {
	if from, err = parseTime(r.start, time.Time{}); err != nil {
		return 0, 0, err
	}
	if to, err = parseTime(r.end, time.Now()); err != nil {
		return 0, 0, err
	}
	if to < from {
		return 0, 0, fmt.Errorf("%s is before %s", r.end, r.start)
	}
	return from, to, nil
}

// openJob parses the range, then opens the command's job (with the series
// mapper when mapper is set; see config.openJob): a command over a range
// begins so. The caller defers the job's close.
func (r *timeRange) openJob(cfg *config, mapper bool, timeout time.Duration) (from, to int64, j *job, err error) {
	if from, to, err = r.parse(); err != nil {
		return 0, 0, nil, err
	}
	open := cfg.openJob
	if mapper {
		open = cfg.openMappingJob
	}
	if j, err = open(timeout); err != nil {
		return 0, 0, nil, err
	}
	return from, to, j, nil
}

// parseTime reads RFC 3339 or a Unix timestamp in seconds (<= 10 digits)
// or milliseconds, and returns Unix milliseconds.
func parseTime(s string, def time.Time) (int64, error) {
	if s == "" {
		return def.UnixMilli(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if len(s) <= 10 {
			return n * 1000, nil
		}
		return n, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("time %q: want RFC 3339 or Unix seconds or milliseconds", s)
	}
	return t.UnixMilli(), nil
}
