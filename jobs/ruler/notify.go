package ruler

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/notifier"
)

// amConfig is the Alertmanager configuration of one URL: its scheme and
// path prefix, basic auth from its user information, API v2 (as Mimir's
// ruler builds it from -ruler.alertmanager-url).
func amConfig(raw string, timeout time.Duration) (*config.AlertmanagerConfig, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("ruler: alertmanager URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("ruler: alertmanager URL %q: want http:// or https:// and a host", raw)
	}
	c := &config.AlertmanagerConfig{
		HTTPClientConfig: commoncfg.DefaultHTTPClientConfig,
		Scheme:           u.Scheme,
		PathPrefix:       strings.TrimSuffix(u.Path, "/"),
		Timeout:          model.Duration(timeout),
		APIVersion:       config.AlertmanagerAPIVersionV2,
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		c.HTTPClientConfig.BasicAuth = &commoncfg.BasicAuth{Username: u.User.Username(), Password: commoncfg.Secret(pw)}
	}
	return c, nil
}

// newNotifier returns a notifier of tenant id's alerts to cfg's
// Alertmanagers, with Prometheus's queue and retries; a tenant's
// requests carry X-Scope-OrgID (Mimir's Alertmanager reads it).
func newNotifier(cfg Config, id string, reg prometheus.Registerer, logger *slog.Logger) (*notifier.Manager, error) {
	opts := &notifier.Options{QueueCapacity: cfg.NotificationQueueCapacity, DrainOnShutdown: true, ExternalLabels: cfg.ExternalLabels, Registerer: reg}
	if id != "" {
		opts.Do = func(ctx context.Context, client *http.Client, req *http.Request) (*http.Response, error) {
			req.Header.Set("X-Scope-OrgID", id)
			return client.Do(req.WithContext(ctx))
		}
	}
	n := notifier.NewManager(opts, model.UTF8Validation, logger.With("component", "notifier"))
	var c config.Config
	c.GlobalConfig.ExternalLabels = cfg.ExternalLabels
	for _, raw := range cfg.AlertmanagerURLs {
		am, err := amConfig(raw, cfg.NotificationTimeout)
		if err != nil {
			return nil, err
		}
		c.AlertingConfig.AlertmanagerConfigs = append(c.AlertingConfig.AlertmanagerConfigs, am)
	}
	if err := n.ApplyConfig(&c); err != nil {
		return nil, fmt.Errorf("ruler: alertmanager configuration: %w", err)
	}
	return n, nil
}

// runNotifier runs n with urls as its targets (static: no discovery)
// until n.Stop.
func runNotifier(n *notifier.Manager, urls []string) {
	tsets := make(chan map[string][]*targetgroup.Group, 1)
	m := map[string][]*targetgroup.Group{}
	for i, raw := range urls {
		u, _ := url.Parse(raw) // checked by New
		m[fmt.Sprintf("config-%d", i)] = []*targetgroup.Group{{
			Source:  raw,
			Targets: []model.LabelSet{{model.AddressLabel: model.LabelValue(u.Host)}},
		}}
	}
	tsets <- m
	n.Run(tsets)
}
