package main

import (
	"maps"
	"testing"
)

// TestRulerExternalLabelsFlag: --ruler.external.labels, repeated, fills
// the ruler's external labels (kingpin's StringMapVar writes into the map
// it is given; a nil one panicked at the first use).
func TestRulerExternalLabelsFlag(t *testing.T) {
	app, c := newApp()
	cmd, err := app.Parse([]string{"serve", "--ruler.external.labels=cluster=a", "--ruler.external.labels=region=eu"})
	if err != nil {
		t.Fatal(err)
	}
	if cmd != c.serve.FullCommand() {
		t.Errorf("command %q, want %q", cmd, c.serve.FullCommand())
	}
	if want := map[string]string{"cluster": "a", "region": "eu"}; !maps.Equal(rulerOpts.externalLabels, want) {
		t.Errorf("external labels %v, want %v", rulerOpts.externalLabels, want)
	}
}
