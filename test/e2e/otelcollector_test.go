package e2e

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	colexporter "go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/promhbase/promhbase/adapter/otlp"
)

// sendByCollector exports md through a Collector otlphttp exporter whose
// endpoint is url without its /v1/metrics (the exporter adds it), with no
// sending queue and no retries, so that an error fails the test.
func sendByCollector(t *testing.T, url string, md pmetric.Metrics) {
	t.Helper()
	ctx := t.Context()
	f := otlphttpexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlphttpexporter.Config)
	cfg.ClientConfig.Endpoint = strings.TrimSuffix(url, "/v1/metrics")
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	set := colexporter.Settings{ID: component.NewID(f.Type()), TelemetrySettings: componenttest.NewNopTelemetrySettings(),
		BuildInfo: component.NewDefaultBuildInfo()}
	exp, err := f.CreateMetrics(ctx, set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Start(ctx, componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(ctx) }()
	if err := exp.ConsumeMetrics(ctx, md); err != nil {
		t.Fatalf("collector export: %v", err)
	}
}

// TestOTelCollectorExporter: the OpenTelemetry Collector's otlphttp
// exporter (its Go module, gzip and protobuf by default), configured
// with promhbase's address plus /otlp as for Mimir, sends the generated
// requests of TestOTLPAgainstPrometheus; what promhbase stores equals what
// Prometheus stores of the same requests posted to its receiver.
func TestOTelCollectorExporter(t *testing.T) {
	t.Parallel()
	bin := prometheusBinary(t)
	testOTLPVariant(t, bin, otlpVariant{name: "collector", cfg: func(*otlp.Config) {}}, 42, sendByCollector)
}
