package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHBaseRootDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	site := `<?xml version="1.0"?>
<configuration>
  <property><name>hbase.cluster.distributed</name><value>false</value></property>
  <property><name>hbase.rootdir</name><value>file:///x/.run/hbase/data</value></property>
</configuration>
`
	if err := os.WriteFile(filepath.Join(dir, "hbase-site.xml"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := hbaseRootDir(dir)
	if err != nil || got != "/x/.run/hbase/data" {
		t.Fatalf("hbaseRootDir = %q, %v", got, err)
	}
	site = strings.Replace(site, "file:///x/.run/hbase/data", "hdfs://nn:8020/hbase", 1)
	if err := os.WriteFile(filepath.Join(dir, "hbase-site.xml"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := hbaseRootDir(dir); err == nil {
		t.Fatal("an HDFS root dir was accepted")
	}
}

func TestHBaseStoreFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]int{
		"data/default/T/.tabledesc/.tableinfo.0000000001.366": 10,
		"data/default/T/r1/.regioninfo":                       20,
		"data/default/T/r1/recovered.edits/1.seqid":           30,
		"data/default/T/r1/t/0123abcd":                        1000,
		"data/default/T/r1/t/.0123abcd.crc":                   40,
		"data/default/T/r1/.tmp/t/tmpfile":                    50,
		"data/default/T/r2/t/4567ef":                          200,
		"data/default/U/r1/id/89":                             7,
		"data/default/U/r1/name/ab":                           8,
		"archive/data/default/T/r1/t/old":                     5000,
	}
	for p, n := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ts := hbaseTables{{"data table", "--hbase.table.data", "T"}, {"UID table", "--hbase.table.uid", "U"}, {"meta table", "--hbase.table.meta", "M"}}
	u, err := measureHBaseTables(root, ts)
	if err != nil {
		t.Fatal(err)
	}
	if u.bytes != 1215 || u.files != 4 || u.kinds["data table"].bytes != 1200 || u.kinds["UID table"].files != 2 || u.kinds["meta table"].files != 0 {
		t.Fatalf("measured %d bytes in %d files: data %+v, uid %+v", u.bytes, u.files, *u.kinds["data table"], *u.kinds["UID table"])
	}
	if note, err := waitStoreFiles(root, ts, map[string][4]int64{"T": {2, 2, 2, 0}, "U": {1, 2, 2, 0}}, 0); err != nil || note != "" {
		t.Fatalf("waitStoreFiles = %q, %v", note, err)
	}
	// A compacted file not yet archived: more files than reported.
	if note, err := waitStoreFiles(root, ts, map[string][4]int64{"T": {2, 2, 1, 0}}, 0); err != nil || note == "" {
		t.Fatalf("waitStoreFiles = %q, %v; want a warning", note, err)
	}
}

func TestParseCompactReport(t *testing.T) {
	t.Parallel()
	got := parseCompactReport("a-tsdb 1 1 1 1048576\nnoise\nb-uid 1 2 2 0\n")
	if len(got) != 2 || got["a-tsdb"] != [4]int64{1, 1, 1, 1048576} || got["b-uid"] != [4]int64{1, 2, 2, 0} {
		t.Fatalf("parseCompactReport = %v", got)
	}
}
