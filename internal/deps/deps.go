// Package deps pins the modules promhbase is built on in go.mod, so that
// `go mod tidy` keeps them while a package that uses one is being written or
// moved. Nothing imports it.
package deps

import (
	_ "github.com/alecthomas/kingpin/v2"
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/go-zookeeper/zk"
	_ "github.com/gogo/protobuf/proto"
	_ "github.com/golang/snappy"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/prometheus/prompb"
	_ "github.com/prometheus/prometheus/storage/remote"
	_ "github.com/prometheus/prometheus/tsdb/chunkenc"
	_ "github.com/tsuna/gohbase"
	_ "github.com/tsuna/gohbase/hrpc"
)
