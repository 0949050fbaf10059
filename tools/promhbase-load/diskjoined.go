package main

// The disk command's joined case (--rollup.joined): promhbase with its
// rollups built only up to some hours before the data's end, the rest read
// raw, beside the same data fully rolled up.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// joinedGrace is the --rollup.grace of the joined case's serve: no hour
// is due, so its scheduler builds nothing and the hours left unbuilt stay
// raw while the queries are timed.
const joinedGrace = "87600h"

// joinedBuild is how the joined case's rollups were built.
type joinedBuild struct {
	command string // the promhbase rollup command line
	took    time.Duration
	output  string // its summary line
}

// joinedDir is the data directory of the joined case: a copy of the
// embedded store's, made after the load, before any rollup was built.
func joinedDir(r *diskRun) string { return r.dataDir + "-joined" }

// prepareJoined copies r's data directory (no rollups yet: the load ran
// with --no-rollup.enabled) and builds the rollups of the copy with
// promhbase rollup from the hour before the data's first to d.rollupJoined
// before its end. A copy made by an earlier call is kept as it is (nil).
func prepareJoined(d diskOptions, g genConfig, r *diskRun) (*joinedBuild, error) {
	dir := joinedDir(r)
	if _, err := os.Stat(dir); err == nil {
		return nil, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "promhbase: copying %s for the joined case...\n", r.dataDir)
	if err := copyDir(r.dataDir, dir); err != nil {
		return nil, fmt.Errorf("copying %s for the joined case: %w", r.dataDir, err)
	}
	// --end is inclusive and builds the hour holding it: the last hour
	// built ends at the data's end less d.rollupJoined.
	end := g.endMs() - time.Duration(d.rollupJoined).Milliseconds() - 1
	args := []string{"rollup", "--storage.embedded.path=" + dir, "--start=" + strconv.FormatInt(g.startMs(), 10), "--end=" + strconv.FormatInt(end, 10)}
	jb := &joinedBuild{command: "promhbase " + strings.Join(args, " ")}
	fmt.Fprintf(os.Stderr, "promhbase: %s...\n", jb.command)
	began := time.Now()
	cmd := exec.Command(d.promhbase, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", jb.command, err, out.String())
	}
	jb.took = time.Since(began)
	jb.output = strings.TrimSpace(out.String())
	fmt.Fprintf(os.Stderr, "promhbase: rollups of the joined case built in %s: %s\n", jb.took.Round(time.Millisecond), jb.output)
	return jb, nil
}

// startJoined starts promhbase serve over the joined case's directory,
// building nothing (--rollup.grace=87600h), and adds its query systems:
// each resolution of d but raw (raw reads the same samples as the other
// process's), or one without max_source_resolution when d has none.
func startJoined(d diskOptions, work string, r *diskRun, rep *queryReport) (*server, error) {
	name := variantName(r.name(), promhbaseVariant{name: fmt.Sprintf("rollups to %s before the end", d.rollupJoined)})
	s, err := startPromhbase(d, joinedDir(r), filepath.Join(work, r.system+"-query-joined.log"), nil, "--rollup.grace="+joinedGrace)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rep.procs = append(rep.procs, &queryProc{name: name, srv: s})
	if len(d.resolutions) == 0 {
		rep.systems = append(rep.systems, &querySystem{sys: r.system, name: name, srv: s, extra: url.Values{"nocache": {"1"}}})
	}
	for _, res := range d.resolutions {
		if !isRawResolution(res) {
			rep.systems = append(rep.systems, &querySystem{sys: r.system, name: name + " " + resolutionName(res), res: res, srv: s,
				extra: url.Values{"max_source_resolution": {res}, "nocache": {"1"}}})
		}
	}
	return s, nil
}

// printJoined reports how the joined case's rollups were built.
func printJoined(w io.Writer, d diskOptions, jb *joinedBuild) {
	if jb == nil {
		return
	}
	fmt.Fprintf(w, "\n## promhbase, rollups built to %s before the end (the rest read raw)\n\n", d.rollupJoined)
	fmt.Fprintf(w, "- a copy of the store after the load (rollups off), then `%s` (%s): %s\n", jb.command, jb.took.Round(time.Millisecond), jb.output)
	fmt.Fprintf(w, "- served with --rollup.grace=%s: its scheduler builds nothing while the queries are timed\n", joinedGrace)
}
