package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/promhbase/promhbase/adapter/migrate/blockimport"
)

// importCmd is `promhbase import`: Prometheus's TSDB blocks into a
// running promhbase, by remote write.
type importCmd struct {
	cmd *kingpin.CmdClause
	timeRange
	paths        []string
	url, tenant  string
	matches      []string
	batch        int
	concurrency  int
	progressFile string
	retryFor     time.Duration
}

func registerImport(app *kingpin.Application) *importCmd {
	c := &importCmd{}
	c.cmd = app.Command("import", "Import Prometheus's TSDB blocks (a data directory, a snapshot from /api/v1/admin/tsdb/snapshot, or block directories; read only) "+
		"into a running promhbase through its remote write, where they take the path of every write (limits, series index, compaction and rollups of their hours). "+
		"Resumable: killed or stopped by an outage, the same command goes on after the series the store acknowledged (a file under the user's cache directory keeps them); nothing is doubled.")
	c.cmd.Arg("path", "Block directories, or directories holding blocks.").Required().StringsVar(&c.paths)
	c.cmd.Flag("url", "promhbase's base URL.").Default("http://localhost:9201").StringVar(&c.url)
	c.cmd.Flag("tenant", "Tenant to import into (sent as X-Scope-OrgID); empty: none.").StringVar(&c.tenant)
	c.flags(c.cmd, "Import samples from this time on: RFC 3339, or Unix seconds or milliseconds; default: all.", "Import samples up to this time (inclusive); default: all.", false)
	c.cmd.Flag("match", "Series selector of the series to import (as match[]); repeatable; default: all.").StringsVar(&c.matches)
	c.cmd.Flag("batch-samples", "Samples of one remote-write request.").Default("50000").IntVar(&c.batch)
	c.cmd.Flag("concurrency", "Remote-write requests in flight at once (the progress recorded is that of every request before the first still in flight).").Default("4").IntVar(&c.concurrency)
	c.cmd.Flag("progress-file", "Where the progress is kept; default: a file named after the import under the user's cache directory.").StringVar(&c.progressFile)
	c.cmd.Flag("retry-for", "How long one request may keep failing (promhbase or its store unavailable) before the import stops; run it again to go on.").Default("10m").DurationVar(&c.retryFor)
	return c
}

func (c *importCmd) run() error {
	minT, maxT := int64(math.MinInt64), int64(math.MaxInt64)
	var err error
	if c.start != "" {
		if minT, err = parseTime(c.start, time.Time{}); err != nil {
			return err
		}
	}
	if c.end != "" {
		if maxT, err = parseTime(c.end, time.Time{}); err != nil {
			return err
		}
	}
	var sets [][]*labels.Matcher
	p := parser.NewParser(parser.Options{})
	for _, m := range c.matches {
		ms, err := p.ParseMetricSelector(m)
		if err != nil {
			return fmt.Errorf("--match=%s: %w", m, err)
		}
		sets = append(sets, ms)
	}
	// The job: what is imported where. Its progress is kept apart.
	h := sha256.New()
	for _, p := range c.paths {
		abs, _ := filepath.Abs(p)
		fmt.Fprintf(h, "path %s\n", abs)
	}
	fmt.Fprintf(h, "url %s\ntenant %s\nrange %d %d\nmatch %s\n", c.url, c.tenant, minT, maxT, strings.Join(c.matches, "\x00"))
	job := hex.EncodeToString(h.Sum(nil))[:16]
	if c.progressFile == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		dir = filepath.Join(dir, "promhbase")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		c.progressFile = filepath.Join(dir, "import-"+job+".json")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bar := newProgressBar(os.Stderr)
	bar.unit = "samples"
	// Whole chunks go to /api/v1/import/chunks as the blocks hold them;
	// samples of chunks that the range or the retention cuts go by
	// remote write.
	base := strings.TrimSuffix(c.url, "/")
	sender := &blockimport.HTTPChunkSender{ChunksURL: base + "/api/v1/import/chunks", HTTPSender: blockimport.HTTPSender{
		URL: base + "/api/v1/write", Tenant: c.tenant, RetryFor: c.retryFor,
		OnRetry: func(err error, wait time.Duration) {
			bar.finish()
			fmt.Fprintf(os.Stderr, "retrying in %s: %v\n", wait.Round(time.Millisecond), err)
		}}}
	// Samples older than the server's retention would be dropped there:
	// they are not sent, and counted.
	var expireBefore int64
	retention, err := serverRetention(ctx, strings.TrimSuffix(c.url, "/"), c.tenant)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "the server's retention is unknown (%v): samples older than it are sent, and the server drops them\n", err)
	case retention > 0:
		expireBefore = time.Now().Add(-retention).UnixMilli()
	}
	start := time.Now()
	st, err := blockimport.Import(ctx, sender, blockimport.Options{Paths: c.paths, MinT: minT, MaxT: maxT, ExpireBefore: expireBefore, Matchers: sets,
		BatchSamples: c.batch, Concurrency: c.concurrency, ProgressFile: c.progressFile, Job: job,
		Progress: func(s blockimport.Stats) { bar.update(int(s.Samples+s.Expired), int(s.SamplesTotal)) }})
	bar.finish()
	resumed := ""
	if st.Resumed {
		resumed = fmt.Sprintf(", resumed: %d blocks and %d series sent before skipped", st.BlocksSkipped, st.SeriesSkipped)
	}
	if err != nil {
		return fmt.Errorf("%w (progress kept in %s: the same command goes on from there)", err, c.progressFile)
	}
	expired := ""
	if st.Expired > 0 {
		expired = fmt.Sprintf(", %d samples older than the server's retention (%s) skipped", st.Expired, model.Duration(retention))
	}
	fmt.Printf("imported %d blocks: %d series (counted in each block), %d samples in %s%s%s; progress in %s\n", st.BlocksDone, st.Series, st.Samples,
		time.Since(start).Round(time.Millisecond), expired, resumed, c.progressFile)
	return nil
}

// serverRetention returns the retention time of the promhbase at base
// (its /api/v1/status/runtimeinfo's storageRetention: "30d", "30d or N
// bytes", or "unlimited", which is 0).
func serverRetention(ctx context.Context, base, tenant string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/status/runtimeinfo", nil)
	if err != nil {
		return 0, err
	}
	if tenant != "" {
		req.Header.Set("X-Scope-OrgID", tenant)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	var info struct {
		Data struct {
			StorageRetention string `json:"storageRetention"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&info); err != nil {
		return 0, fmt.Errorf("GET %s: %w", req.URL, err)
	}
	r, _, _ := strings.Cut(info.Data.StorageRetention, " or ")
	if r == "" || r == "unlimited" || strings.HasSuffix(r, "bytes") {
		return 0, nil
	}
	d, err := model.ParseDuration(r)
	if err != nil {
		return 0, fmt.Errorf("the server's retention %q: %w", info.Data.StorageRetention, err)
	}
	return time.Duration(d), nil
}
