package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestOTelSDKExporter: the OpenTelemetry Go SDK's otlpmetrichttp exporter
// (gzip, as configured by default in most deployments), pointed at
// promhbase's OTLP path, exports a counter, an up-down counter, a gauge
// and a histogram twice; every value reads back exactly through the
// query API under Prometheus's names, job and instance from the resource.
func TestOTelSDKExporter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, tb := testbackend.New(t)
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{})
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(srv.URL+"/otlp/v1/metrics"),
		otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression))
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("checkout"), semconv.ServiceNamespace("shop"),
		semconv.ServiceInstanceID("pod-7"), attribute.String("host.name", "node-1"))
	reader := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour)) // exported by ForceFlush alone
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	m := mp.Meter("e2e")
	orders, _ := m.Float64Counter("orders.placed", metric.WithUnit("{order}"))
	inflight, _ := m.Int64UpDownCounter("requests.inflight")
	temp, _ := m.Float64Gauge("cpu.temperature", metric.WithUnit("Cel"))
	dur, _ := m.Float64Histogram("checkout.duration", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.1, 0.5, 1))
	card := metric.WithAttributes(attribute.String("payment.method", "card"))

	orders.Add(ctx, 3, card)
	inflight.Add(ctx, 5)
	temp.Record(ctx, 61.5)
	for _, v := range []float64{0.05, 0.3, 0.7, 2} {
		dur.Record(ctx, v, card)
	}
	if err := mp.ForceFlush(ctx); err != nil {
		t.Fatalf("export: %v", err)
	}
	orders.Add(ctx, 1.5, card)
	inflight.Add(ctx, -2)
	temp.Record(ctx, 59)
	dur.Record(ctx, 0.2, card)
	if err := mp.ForceFlush(ctx); err != nil {
		t.Fatalf("export: %v", err)
	}

	api := promAPI{name: "promhbase", base: srv.URL, client: &http.Client{Timeout: time.Minute}}
	const sel = `job="shop/checkout", instance="pod-7"`
	for expr, want := range map[string]float64{
		`orders_placed_total{` + sel + `, payment_method="card"}`:  4.5,
		`requests_inflight{` + sel + `}`:                           3,
		`cpu_temperature_celsius{` + sel + `}`:                     59,
		`checkout_duration_seconds_count{` + sel + `}`:             5,
		`checkout_duration_seconds_sum{` + sel + `}`:               3.25,
		`checkout_duration_seconds_bucket{` + sel + `, le="0.5"}`:  3,
		`checkout_duration_seconds_bucket{` + sel + `, le="+Inf"}`: 5,
		`count(target_info{` + sel + `, host_name="node-1"})`:      1,
	} {
		r, err := api.query(ctx, promQuery{expr: expr, at: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(r.series)
		if len(r.series) != 1 {
			t.Errorf("%s: %d series %s, want one of value %v", expr, len(r.series), got, want)
			continue
		}
		for _, pts := range r.series {
			if len(pts) != 1 || pts[0].v != want {
				t.Errorf("%s = %s, want %v", expr, got, want)
			}
		}
	}
	// The metrics' types and units, as the converter gives them.
	var meta map[string][]struct{ Type, Unit string }
	if err := api.getData(ctx, "/api/v1/metadata", nil, &meta); err != nil {
		t.Fatal(err)
	}
	for metric, want := range map[string]string{"orders_placed_total": "counter ", "checkout_duration_seconds": "histogram seconds",
		"cpu_temperature_celsius": "gauge celsius", "requests_inflight": "gauge "} {
		if m := meta[metric]; len(m) != 1 || m[0].Type+" "+m[0].Unit != want {
			t.Errorf("metadata of %s: %+v, want %q", metric, m, want)
		}
	}
}
