package main

import (
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/otlptranslator"

	"github.com/promhbase/promhbase/adapter/otlp"
)

// otlpFlags are serve's --otlp.* flags: how OTLP metrics are translated,
// in the words of Prometheus's configuration file's otlp section (every
// tenant's, unless the runtime configuration overrides it).
type otlpFlags struct {
	strategy                 string
	promote, ignore          string
	promoteAll, keepIdentity bool
	nhcb, scope, nativeDelta bool
	underscores, preserve    bool
}

// registerOTLPFlags defines the --otlp.* flags of serve.
func registerOTLPFlags(cmd *kingpin.CmdClause, f *otlpFlags) {
	cmd.Flag("otlp.translation-strategy", "How OTLP metric and label names become Prometheus's, as Prometheus's otlp.translation_strategy: UnderscoreEscapingWithSuffixes (dots to underscores, unit and type suffixes: http_server_request_duration_seconds), UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes (names kept, suffixes added) or NoTranslation.").
		Default(string(otlptranslator.UnderscoreEscapingWithSuffixes)).EnumVar(&f.strategy,
		string(otlptranslator.UnderscoreEscapingWithSuffixes), string(otlptranslator.UnderscoreEscapingWithoutSuffixes),
		string(otlptranslator.NoUTF8EscapingWithSuffixes), string(otlptranslator.NoTranslation))
	cmd.Flag("otlp.promote-resource-attributes", "Resource attributes made labels of every series of their resource, comma-separated (e.g. k8s.pod.name,host.name); the others are labels of target_info alone.").StringVar(&f.promote)
	cmd.Flag("otlp.promote-all-resource-attributes", "Make every resource attribute a label of its series, but those of --otlp.ignore-resource-attributes (exclusive with --otlp.promote-resource-attributes).").BoolVar(&f.promoteAll)
	cmd.Flag("otlp.ignore-resource-attributes", "With --otlp.promote-all-resource-attributes, the resource attributes not made labels, comma-separated.").StringVar(&f.ignore)
	cmd.Flag("otlp.keep-identifying-resource-attributes", "Keep service.name, service.namespace and service.instance.id as labels of target_info besides job and instance.").BoolVar(&f.keepIdentity)
	cmd.Flag("otlp.convert-histograms-to-nhcb", "Store OTLP explicit-bucket histograms as native histograms with custom buckets instead of classic _bucket, _sum and _count series.").BoolVar(&f.nhcb)
	cmd.Flag("otlp.promote-scope-metadata", "Add the instrumentation scope's name, version, schema URL and attributes as otel_scope_* labels.").BoolVar(&f.scope)
	cmd.Flag("otlp.native-delta-ingestion", "Store delta temporality sums and histograms as they come, as Prometheus's otlp-native-delta-ingestion feature (query them with sum_over_time); without it their points are refused (a partial success naming them).").BoolVar(&f.nativeDelta)
	cmd.Flag("otlp.label-name-underscore-sanitization", "Prefix key_ to translated label names that start with a single underscore.").Default("true").BoolVar(&f.underscores)
	cmd.Flag("otlp.label-name-preserve-multiple-underscores", "Keep runs of underscores in translated label names instead of collapsing them to one.").Default("true").BoolVar(&f.preserve)
}

// config returns the translation settings of the flags, checked.
func (f otlpFlags) config(lookback time.Duration) (otlp.Config, error) {
	c := otlp.DefaultConfig()
	c.TranslationStrategy = otlptranslator.TranslationStrategyOption(f.strategy)
	c.PromoteResourceAttributes, c.IgnoreResourceAttributes = otlp.SplitList(f.promote), otlp.SplitList(f.ignore)
	c.PromoteAllResourceAttributes, c.KeepIdentifyingResourceAttributes = f.promoteAll, f.keepIdentity
	c.ConvertHistogramsToNHCB, c.PromoteScopeMetadata, c.NativeDelta = f.nhcb, f.scope, f.nativeDelta
	c.LabelNameUnderscoreSanitization, c.LabelNamePreserveMultipleUnderscores = f.underscores, f.preserve
	if lookback > 0 {
		c.LookbackDelta = lookback
	}
	if err := c.Validate(); err != nil {
		return otlp.Config{}, fmt.Errorf("--otlp.*: %w", err)
	}
	return c, nil
}
