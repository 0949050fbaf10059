package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRulerExternalLabelsFlag: --ruler.external.labels, repeated, fills
// the ruler's external labels (kingpin's StringMapVar writes into the map
// it is given; a nil one panicked at the first use).
func TestRulerExternalLabelsFlag(t *testing.T) {
	app, c := newApp()
	cmd, err := app.Parse([]string{"serve", "--ruler.external.labels=cluster=a", "--ruler.external.labels=region=eu"})
	require.NoError(t, err)
	require.Equal(t, c.serve.FullCommand(), cmd)
	require.Equal(t, map[string]string{"cluster": "a", "region": "eu"}, rulerOpts.externalLabels)
}
