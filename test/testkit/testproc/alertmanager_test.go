package testproc

import (
	"testing"
	"time"
)

// TestAlertmanager: the harness's Alertmanager takes an alert on
// /api/v2/alerts, lists it back, notifies the webhook of it, and of its
// resolution.
func TestAlertmanager(t *testing.T) {
	am := StartAlertmanager(t, AlertmanagerBinary(t, Root(t, "tools/scripts/alertmanager.sh")))
	startsAt := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	alert := PostableAlert{
		Labels:       map[string]string{"alertname": "HighErrorRate", "job": "api", "severity": "page"},
		Annotations:  map[string]string{"summary": "errors are high"},
		StartsAt:     startsAt,
		GeneratorURL: "http://promhbase.example/graph",
	}
	if err := am.PostAlerts(t.Context(), alert); err != nil {
		t.Fatal(err)
	}

	got := am.WaitAlerts(t, 10*time.Second, func(a []GettableAlert) bool { return len(a) == 1 })[0]
	for k, want := range alert.Labels {
		if got.Labels[k] != want {
			t.Errorf("label %s = %q, want %q (labels %v)", k, got.Labels[k], want, got.Labels)
		}
	}
	if got.Annotations["summary"] != "errors are high" || !got.StartsAt.Equal(startsAt) ||
		got.GeneratorURL != alert.GeneratorURL || got.Status.State != "active" ||
		len(got.Receivers) != 1 || got.Receivers[0].Name != "test-webhook" {
		t.Errorf("alert read back %+v, want the one posted, active, to test-webhook", got)
	}

	firing := am.WaitNotification(t, 10*time.Second, func(m WebhookMessage) bool { return m.Status == "firing" })
	if len(firing.Alerts) != 1 || firing.Alerts[0].Labels["alertname"] != "HighErrorRate" || firing.Receiver != "test-webhook" {
		t.Errorf("firing notification %+v, want HighErrorRate's to test-webhook", firing)
	}

	// An end in the past resolves it, as a ruler's last send does.
	alert.EndsAt = time.Now().Add(-time.Second).UTC()
	if err := am.PostAlerts(t.Context(), alert); err != nil {
		t.Fatal(err)
	}
	resolved := am.WaitNotification(t, 10*time.Second, func(m WebhookMessage) bool { return m.Status == "resolved" })
	if len(resolved.Alerts) != 1 || resolved.Alerts[0].Labels["alertname"] != "HighErrorRate" {
		t.Errorf("resolved notification %+v, want HighErrorRate's", resolved)
	}
}
