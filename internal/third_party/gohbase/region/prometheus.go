// Copyright (C) 2021  The GoHBase Authors.  All rights reserved.
// This file is part of GoHBase.
// Use of this source code is governed by the Apache License 2.0
// that can be found in the COPYING file.

package region

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	flushReasonCount = promauto.NewCounterVec(
		prometheus.CounterOpts{
			Namespace: "gohbase",
			Name:      "batch_flush_count",
			Help:      "Number of times a gohbase batch was flushed",
		},
		[]string{"reason"},
	)

	flushSize = promauto.NewHistogramVec(
		prometheus.HistogramOpts{
			Namespace: "gohbase",
			Name:      "batch_flush_size",
			Help:      "Number of RPCs sent in multis",
			Buckets:   prometheus.ExponentialBuckets(1, 5, 8),
		},
		[]string{"regionserver"},
	)

	rpcSize = promauto.NewHistogramVec(
		prometheus.HistogramOpts{
			Namespace: "gohbase",
			Name:      "rpc_size_bytes",
			Help:      "Number of bytes sent per RPC call to HBase",
			// >>> [1024*(4**i) for i in range(8)]
			// [1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216]
			Buckets: prometheus.ExponentialBuckets(1024, 4, 8),
		},
		[]string{"regionserver"},
	)

	rpcResultCount = promauto.NewCounterVec(
		prometheus.CounterOpts{
			Namespace: "gohbase",
			Name:      "rpc_result_count",
			Help:      "Number of RPC operations by result status and operation type",
		},
		[]string{"operation", "status", "type"},
	)

	pingLatency = promauto.NewHistogramVec(
		prometheus.HistogramOpts{
			Namespace: "gohbase",
			Name:      "ping_latency_seconds",
			Help:      "Ping scan latency in seconds",
			Buckets:   prometheus.ExponentialBuckets(0.0002, 2, 12),
		},
		[]string{"regionserver"},
	)

	concurrentScans = promauto.NewGaugeVec(
		prometheus.GaugeOpts{
			Namespace: "gohbase",
			Name:      "concurrent_scans_limit",
			Help:      "Max number of concurrent scans per region server",
		},
		[]string{"regionserver"},
	)

	scanQueueLatency = promauto.NewHistogramVec(
		prometheus.HistogramOpts{
			Namespace: "gohbase",
			Name:      "scan_queue_latency_seconds",
			Help:      "Time spent waiting to execute a scan request",

			// TODO: Buckets can be removed when NativeHistogram is adopted.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 17),

			// Recommended default NativeHistogram settings:
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,

			// 2^-20 ≈ 954ns ≈ 1us — captures "token was ready" fast
			// path and places those results in the zero bucket. This
			// removes histogram fidelity at sub ~1us and saves it for
			// the higher end of the scale.
			NativeHistogramZeroThreshold: 0x1p-20,
		},
		[]string{"regionserver"},
	)

	concurrentBatchRequests = promauto.NewGaugeVec(
		prometheus.GaugeOpts{
			Namespace: "gohbase",
			Name:      "concurrent_batch_requests_limit",
			Help:      "Max number of concurrent batch requests per region server",
		},
		[]string{"regionserver"},
	)

	// Counter for # of times concurrent batch requests limit was hit
	concurrentBatchRequestsLimitHit = promauto.NewCounterVec(
		prometheus.CounterOpts{
			Namespace: "gohbase",
			Name:      "concurrent_batch_requests_limit_hit",
			Help:      "Number of times concurrent batch requests limit was hit",
		},
		[]string{"regionserver"},
	)
)
