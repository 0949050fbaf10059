package testproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// AlertmanagerBinary returns the path of the Alertmanager binary that the
// project's tools/scripts/alertmanager.sh (at script, relative to the current
// directory: testproc.Root(t, "tools/scripts/alertmanager.sh"), ...) builds or finds
// in its cache. Under CI=true a failure fails the test; elsewhere it
// skips it.
func AlertmanagerBinary(t testing.TB, script string) string {
	t.Helper()
	return ScriptBinary(t, script, "Alertmanager")
}

// Alertmanager is a real Alertmanager started by StartAlertmanager: one
// instance, clustering off, its data in a temporary directory, every
// notification sent to a webhook the test reads (Notifications).
type Alertmanager struct {
	*Process
	// URL is its base URL, http://127.0.0.1:port: a ruler's
	// Alertmanager URL (the ruler posts to URL/api/v2/alerts).
	URL string

	mu       sync.Mutex
	received []WebhookMessage
	notified chan struct{} // closed and replaced at each notification
}

// AlertmanagerConfig is the configuration StartAlertmanager writes: one
// route to the webhook receiver, every alert a group of its own
// (group_by: ['...']), notified at once and again a second after a change,
// resolutions too. %s is the webhook's URL.
const AlertmanagerConfig = `route:
  receiver: test-webhook
  group_by: ['...']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: test-webhook
    webhook_configs:
      - url: %s
        send_resolved: true
`

// StartAlertmanager starts the Alertmanager binary bin (AlertmanagerBinary)
// on a free loopback port with AlertmanagerConfig, its webhook an
// httptest server of the test, clustering off (--cluster.listen-address
// empty) and --storage.path in a temporary directory, and waits until it
// answers /-/ready. It is stopped, and its webhook closed, when the test
// ends.
func StartAlertmanager(t testing.TB, bin string) *Alertmanager {
	t.Helper()
	am := &Alertmanager{notified: make(chan struct{})}
	hook := httptest.NewServer(http.HandlerFunc(am.receive))
	t.Cleanup(hook.Close)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, AlertmanagerConfig, hook.URL+"/webhook"), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, listen := StartServer(t, ServerSpec{
		Name:   "alertmanager",
		LogDir: dir,
		Command: func(listen string) *exec.Cmd {
			// Not the test's context: ending it would kill Alertmanager
			// before Stop's SIGTERM; Stop ends it when the test ends.
			return exec.CommandContext(context.WithoutCancel(t.Context()), bin,
				"--config.file="+cfg,
				"--storage.path="+filepath.Join(dir, "data"),
				"--web.listen-address="+listen,
				"--cluster.listen-address=",
				"--log.level=debug",
			)
		},
		ReadyPath:    "/-/ready",
		ReadyTimeout: time.Minute,
		LogTail:      40,
	})
	am.Process, am.URL = proc, "http://"+listen
	return am
}

// WebhookMessage is a notification of Alertmanager's webhook receiver
// (version "4").
type WebhookMessage struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	Status            string            `json:"status"` // "firing" or "resolved"
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []WebhookAlert    `json:"alerts"`
}

// WebhookAlert is one alert of a WebhookMessage.
type WebhookAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// receive records a webhook notification.
func (am *Alertmanager) receive(w http.ResponseWriter, r *http.Request) {
	var m WebhookMessage
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	am.mu.Lock()
	am.received = append(am.received, m)
	close(am.notified)
	am.notified = make(chan struct{})
	am.mu.Unlock()
}

// Notifications returns the webhook notifications received so far, in
// the order they came (a copy).
func (am *Alertmanager) Notifications() []WebhookMessage {
	am.mu.Lock()
	defer am.mu.Unlock()
	return slices.Clone(am.received)
}

// WaitNotification waits until a notification received (before or during
// the wait) satisfies match, and returns it; it fails the test after
// timeout, listing what came.
func (am *Alertmanager) WaitNotification(t testing.TB, timeout time.Duration, match func(WebhookMessage) bool) WebhookMessage {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		am.mu.Lock()
		received, notified := slices.Clone(am.received), am.notified
		am.mu.Unlock()
		for _, m := range received {
			if match(m) {
				return m
			}
		}
		select {
		case <-notified:
		case <-deadline.C:
			t.Fatalf("alertmanager: no matching notification after %s; received %+v", timeout, received)
		case <-t.Context().Done():
			t.Fatalf("alertmanager: test ended waiting for a notification")
		}
	}
}

// PostableAlert is an alert as Alertmanager's /api/v2/alerts takes it
// (what Prometheus's notifier sends).
type PostableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt,omitzero"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// GettableAlert is an alert as Alertmanager's GET /api/v2/alerts
// answers it.
type GettableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	UpdatedAt    time.Time         `json:"updatedAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
	Status       struct {
		State       string   `json:"state"` // "active", "suppressed" or "unprocessed"
		SilencedBy  []string `json:"silencedBy"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
	Receivers []struct {
		Name string `json:"name"`
	} `json:"receivers"`
}

// PostAlerts posts alerts to Alertmanager's /api/v2/alerts.
func (am *Alertmanager) PostAlerts(ctx context.Context, alerts ...PostableAlert) error {
	body, err := json.Marshal(alerts)
	if err != nil {
		return fmt.Errorf("encode %d alerts: %w", len(alerts), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, am.URL+"/api/v2/alerts", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("alerts request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("post %s/api/v2/alerts: %w", am.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("post %s/api/v2/alerts: %s: %s", am.URL, resp.Status, b)
	}
	return nil
}

// Alerts reads Alertmanager's alerts (GET /api/v2/alerts: active,
// silenced, inhibited and unprocessed ones).
func (am *Alertmanager) Alerts(ctx context.Context) ([]GettableAlert, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, am.URL+"/api/v2/alerts", nil)
	if err != nil {
		return nil, fmt.Errorf("alerts request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s/api/v2/alerts: %w", am.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("get %s/api/v2/alerts: %s: %s", am.URL, resp.Status, b)
	}
	var alerts []GettableAlert
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		return nil, fmt.Errorf("decode %s/api/v2/alerts: %w", am.URL, err)
	}
	return alerts, nil
}

// WaitAlerts polls Alerts every 100 ms until match accepts what it
// answers, and returns that; it fails the test after timeout, showing
// the last answer.
func (am *Alertmanager) WaitAlerts(t testing.TB, timeout time.Duration, match func([]GettableAlert) bool) []GettableAlert {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var last []GettableAlert
	var lastErr error
	for {
		last, lastErr = am.Alerts(ctx)
		if lastErr == nil && match(last) {
			return last
		}
		select {
		case <-ctx.Done():
			t.Fatalf("alertmanager: alerts not as wanted after %s: %+v (last error: %v)", timeout, last, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
