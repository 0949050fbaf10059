package main

import (
	_ "embed"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The promhbase-hbase system of the disk command: promhbase serve on a
// running HBase (tools/scripts/hbase.sh's test HBase by default), the tables
// created fresh under unique names, flushed and major-compacted after the
// load, their store files measured and the tables dropped at the end.

//go:embed hbasetables.java
var hbaseTablesJava []byte

// hbaseTable is one table of a promhbase-hbase run: its role (the kind
// it is reported under), the create-tables and serve flag naming it, and
// its name.
type hbaseTable struct {
	role, flag, name string
}

// hbaseTables are the tables of one run, the data table first.
type hbaseTables []hbaseTable

func newHBaseTables(prefix string) hbaseTables {
	return hbaseTables{
		{"data table", "--hbase.table.data", prefix + "-tsdb"},
		{"UID table", "--hbase.table.uid", prefix + "-tsdb-uid"},
		{"exemplar table", "--hbase.table.exemplar", prefix + "-tsdb-exemplar"},
		{"meta table", "--hbase.table.meta", prefix + "-tsdb-meta"},
		{"index table", "--hbase.table.index", prefix + "-tsdb-index"},
	}
}

func (ts hbaseTables) flags() []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.flag + "=" + t.name
	}
	return out
}

func (ts hbaseTables) names() []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.name
	}
	return out
}

// hbaseEnv is what the harness needs of the HBase beyond ZooKeeper: the
// root directory its tables' files are in, and java with HBase's jars and
// configuration to run hbasetables.java.
type hbaseEnv struct {
	rootDir   string
	java      string
	classpath string
	script    string // hbasetables.java in the work directory
	logConf   string
	quorum    string
}

// defaultHBaseJars is where tools/scripts/hbase.sh caches HBase's jars (lib/)
// and the aircompressor codecs (codecs/).
func defaultHBaseJars() string {
	cache := os.Getenv("PROMHBASE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "promhbase")
	}
	v := os.Getenv("HBASE_VERSION")
	if v == "" {
		v = "2.6.4-hadoop3"
	}
	return filepath.Join(cache, "hbase-"+v)
}

// defaultJava finds java as tools/scripts/hbase.sh does: $JAVA_HOME, else JDK
// 17 where Debian puts it, else java on PATH.
func defaultJava() string {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		return filepath.Join(h, "bin", "java")
	}
	if j := "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"; fileExists(j) {
		return j
	}
	return "java"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// hbaseRootDir reads hbase.rootdir from the hbase-site.xml in conf; only
// a local file system root (file://) can be measured.
func hbaseRootDir(conf string) (string, error) {
	site := filepath.Join(conf, "hbase-site.xml")
	b, err := os.ReadFile(site)
	if err != nil {
		return "", fmt.Errorf("%w (is the test HBase up? tools/scripts/hbase.sh up; or set --hbase.conf)", err)
	}
	var c struct {
		Props []struct {
			Name  string `xml:"name"`
			Value string `xml:"value"`
		} `xml:"property"`
	}
	if err := xml.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("%s: %w", site, err)
	}
	for _, p := range c.Props {
		if strings.TrimSpace(p.Name) != "hbase.rootdir" {
			continue
		}
		v := strings.TrimSpace(p.Value)
		if dir, ok := strings.CutPrefix(v, "file://"); ok {
			return dir, nil
		}
		if strings.HasPrefix(v, "/") {
			return v, nil
		}
		return "", fmt.Errorf("%s: hbase.rootdir %q is not on the local file system; only a local HBase can be measured", site, v)
	}
	return "", fmt.Errorf("%s has no hbase.rootdir", site)
}

func newHBaseEnv(d diskOptions, work string) (*hbaseEnv, error) {
	conf, err := filepath.Abs(d.hbaseConf)
	if err != nil {
		return nil, err
	}
	root, err := hbaseRootDir(conf)
	if err != nil {
		return nil, err
	}
	lib := filepath.Join(d.hbaseJars, "lib")
	if !fileExists(lib) {
		return nil, fmt.Errorf("no HBase jars in %s (tools/scripts/hbase.sh up fetches them; or set --hbase.jars)", lib)
	}
	cp := conf + ":" + lib + "/*"
	if codecs := filepath.Join(d.hbaseJars, "codecs"); fileExists(codecs) {
		cp += ":" + codecs + "/*"
	}
	e := &hbaseEnv{rootDir: root, java: d.java, classpath: cp, quorum: d.hbaseQuorum,
		script: filepath.Join(work, "hbasetables.java"), logConf: filepath.Join(work, "hbasetables-log4j2.properties")}
	if err := os.WriteFile(e.script, hbaseTablesJava, 0o644); err != nil {
		return nil, err
	}
	// The client logs warnings and errors only.
	logConf := "status = warn\nappender.console.type = Console\nappender.console.name = console\nappender.console.target = SYSTEM_ERR\n" +
		"appender.console.layout.type = PatternLayout\nappender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n\n" +
		"rootLogger.level = warn\nrootLogger.appenderRef.console.ref = console\nlogger.zookeeper.name = org.apache.zookeeper\nlogger.zookeeper.level = error\n" +
		"logger.native.name = org.apache.hadoop.util.NativeCodeLoader\nlogger.native.level = error\n" +
		"logger.registry.name = org.apache.hadoop.hbase.client.ZKConnectionRegistry\nlogger.registry.level = error\n"
	if err := os.WriteFile(e.logConf, []byte(logConf), 0o644); err != nil {
		return nil, err
	}
	return e, nil
}

// admin runs hbasetables.java with args; its stderr goes to ours, its
// stdout is returned.
func (e *hbaseEnv) admin(args ...string) (string, error) {
	a := append([]string{"-Xmx256m", "-Djava.net.preferIPv4Stack=true", "-Dlog4j2.configurationFile=file:" + e.logConf,
		"-Dpromhbase.zookeeper.quorum=" + e.quorum,
		// What bin/hbase adds on JDK 11 and later.
		"-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true", "--add-modules", "jdk.unsupported",
		"--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
		"--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
		"--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED", "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
		"-cp", e.classpath, e.script}, args...)
	cmd := exec.Command(e.java, a...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s hbasetables.java %s: %w", e.java, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// startPromhbaseHBase starts promhbase serve on the tables ts, with
// --promhbase.flag's flags and extra, in env (nil: this process's).
func startPromhbaseHBase(d diskOptions, ts hbaseTables, logPath string, env []string, extra ...string) (*server, error) {
	return startServer(sysPromhbaseHBase, logPath, syscall.SIGTERM, "/-/ready", func(addr string) *exec.Cmd {
		args := append([]string{"serve", "--web.listen-address=" + addr, "--storage.backend=hbase", "--hbase.zookeeper.quorum=" + d.hbaseQuorum,
			"--limits.new-series-rate=0", "--limits.max-active-series=0"}, ts.flags()...)
		args = append(args, d.promhbaseFlags...)
		cmd := exec.Command(d.promhbase, append(args, extra...)...)
		cmd.Env = env
		return cmd
	})
}

// diskPromhbaseHBase creates the tables, loads them through promhbase
// serve, waits for promhbase's compaction, flushes and major-compacts the
// tables and measures their store files, once for each of
// --hbase.compression: the tables are created with the first codec, and
// for each further one their families are altered to it and
// major-compacted again (the same cells rewritten with that codec). The
// tables are dropped by the function it hands atEnd, after the queries.
func diskPromhbaseHBase(o options, d diskOptions, g genConfig, work string, atEnd func(func())) ([]*diskRun, error) {
	env, err := newHBaseEnv(d, work)
	if err != nil {
		return nil, err
	}
	ts := newHBaseTables(fmt.Sprintf("bench-disk-%d-%d", time.Now().Unix(), os.Getpid()))
	codecs := d.hbaseCompressions
	fmt.Fprintf(os.Stderr, "promhbase-hbase: create-tables %s (compression %s) on %s\n", strings.Join(ts.names(), ", "), codecs[0], d.hbaseQuorum)
	create := exec.Command(d.promhbase, append([]string{"create-tables", "--storage.backend=hbase", "--hbase.zookeeper.quorum=" + d.hbaseQuorum,
		"--hbase.compression=" + codecs[0]}, ts.flags()...)...)
	out, err := create.CombinedOutput()
	// Drop whatever was created, even when create-tables failed half way.
	atEnd(func() {
		if d.hbaseKeepTables {
			fmt.Fprintf(os.Stderr, "promhbase-hbase: tables kept: %s\n", strings.Join(ts.names(), " "))
			return
		}
		if _, err := env.admin(append([]string{"drop"}, ts.names()...)...); err != nil {
			fmt.Fprintf(os.Stderr, "promhbase-hbase: warning: dropping the tables: %v\n", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("promhbase create-tables: %w\n%s", err, out)
	}

	first := &diskRun{system: sysPromhbaseHBase, codec: strings.ToUpper(codecs[0]), tables: ts}
	srv, err := startPromhbaseHBase(d, ts, filepath.Join(work, "promhbase-hbase-load.log"), nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = srv.stop() }()
	fmt.Fprintf(os.Stderr, "promhbase-hbase: loading %d samples...\n", g.samples())
	began := time.Now()
	if _, err := loadRemoteWrite(srv.base+"/api/v1/write", g, o.concurrency, o.batch); err != nil {
		return nil, srv.withLog(err)
	}
	first.load = time.Since(began)
	fmt.Fprintf(os.Stderr, "promhbase-hbase: loaded in %s (%.0f samples/s); waiting for promhbase's compaction...\n", first.load.Round(time.Millisecond), float64(g.samples())/first.load.Seconds())
	began = time.Now()
	how, err := settlePromhbase(srv, d.settleQuiet, d.settleTimeout)
	if err != nil {
		return nil, srv.withLog(err)
	}
	fmt.Fprintf(os.Stderr, "promhbase-hbase: %s after %s\n", how, time.Since(began).Round(time.Second))
	if err := srv.stop(); err != nil {
		return nil, err
	}
	promhbaseSettle := time.Since(began)

	var runs []*diskRun
	for i, codec := range codecs {
		r := first
		if i > 0 {
			r = &diskRun{system: sysPromhbaseHBase, codec: strings.ToUpper(codec), tables: ts, load: first.load}
			fmt.Fprintf(os.Stderr, "promhbase-hbase: altering every family to %s...\n", r.codec)
			if _, err := env.admin(append([]string{"compress", codec}, ts.names()...)...); err != nil {
				return nil, err
			}
		}
		began := time.Now()
		fmt.Fprintf(os.Stderr, "promhbase-hbase (%s): flush and major compaction...\n", r.codec)
		out, err := env.admin(append([]string{"compact", strconv64(d.settleTimeout)}, ts.names()...)...)
		if err != nil {
			return nil, err
		}
		reported := parseCompactReport(out)
		wait, err := waitStoreFiles(env.rootDir, ts, reported, 2*time.Minute)
		if err != nil {
			return nil, err
		}
		r.usage, err = measureHBaseTables(env.rootDir, ts)
		if err != nil {
			return nil, err
		}
		compaction := time.Since(began)
		r.settle = compaction
		if i == 0 {
			r.settle += promhbaseSettle
			r.note = fmt.Sprintf("promhbase serve on HBase (%s), %s; promhbase stopped (SIGTERM), then flush and major compaction of every table (%s), ", r.codec, how, compaction.Round(time.Second))
		} else {
			r.note = fmt.Sprintf("the same tables altered to %s, then flush and major compaction of every table (%s), ", r.codec, compaction.Round(time.Second))
		}
		r.note += fmt.Sprintf("store files under %s/data/default measured%s; region servers report %s", env.rootDir, wait, reportedSummary(reported))
		r.noQuery = i < len(codecs)-1
		runs = append(runs, r)
	}
	return runs, nil
}

func strconv64(d time.Duration) string { return fmt.Sprintf("%d", int64(d.Seconds())) }

// parseCompactReport reads hbasetables.java compact's lines "TABLE
// REGIONS STORES STOREFILES BYTES" into table -> [regions stores files
// bytes].
func parseCompactReport(out string) map[string][4]int64 {
	m := map[string][4]int64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue
		}
		var v [4]int64
		ok := true
		for i := range v {
			if _, err := fmt.Sscan(f[i+1], &v[i]); err != nil {
				ok = false
			}
		}
		if ok {
			m[f[0]] = v
		}
	}
	return m
}

func reportedSummary(rep map[string][4]int64) string {
	// (Their store file size is in whole MB: not printed.)
	var files int64
	for _, v := range rep {
		files += v[2]
	}
	return fmt.Sprintf("%d store files", files)
}

// storeFile reports whether rel, a path below a table's directory, is a
// store file: REGION/FAMILY/FILE, not the region's .regioninfo, its
// recovered edits or .tmp, nor a hidden (checksum) file.
func storeFile(rel string) (family string, ok bool) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) != 3 {
		return "", false
	}
	for _, p := range parts {
		if strings.HasPrefix(p, ".") {
			return "", false
		}
	}
	if parts[1] == "recovered.edits" {
		return "", false
	}
	return parts[0] + "/" + parts[1], true
}

// walkStoreFiles calls fn for every store file of the table.
func walkStoreFiles(root, table string, fn func(family string, fi fs.FileInfo)) error {
	dir := filepath.Join(root, "data", "default", table)
	return filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() {
			if e.Name() == ".tmp" || e.Name() == "recovered.edits" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		fam, ok := storeFile(rel)
		if !ok {
			return nil
		}
		fi, ok, err := entryInfo(e)
		if !ok {
			return err
		}
		fn(fam, fi)
		return nil
	})
}

// waitStoreFiles waits until the compacted files have left the stores
// (HBase moves them to the archive a few seconds after the compaction):
// as many store files on disk as the region servers report, and at most
// one a store. It returns a note when it gave up.
func waitStoreFiles(root string, ts hbaseTables, rep map[string][4]int64, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		ok := true
		var n int
		for _, t := range ts {
			byFamily := map[string]int{}
			files := 0
			if err := walkStoreFiles(root, t.name, func(fam string, _ fs.FileInfo) { byFamily[fam]++; files++ }); err != nil {
				return "", err
			}
			for _, c := range byFamily {
				ok = ok && c <= 1
			}
			if want, have := rep[t.name]; have && int64(files) != want[2] {
				ok = false
			}
			n += files
		}
		if ok {
			return "", nil
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf(" (warning: %d store files still on disk after %s, more than compacted)", n, timeout), nil
		}
		time.Sleep(time.Second)
	}
}

// measureHBaseTables sums the store files of the tables, by table.
func measureHBaseTables(root string, ts hbaseTables) (*dirUsage, error) {
	u := &dirUsage{kinds: map[string]*kindUsage{}}
	for _, t := range ts {
		u.kinds[t.role] = &kindUsage{}
		err := walkStoreFiles(root, t.name, func(_ string, fi fs.FileInfo) { u.add(t.role, fi) })
		if err != nil {
			return nil, err
		}
	}
	return u, nil
}
