package hatracker

import (
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// electionView is one election as the page shows it.
type electionView struct {
	Tenant         string    `json:"tenant"`
	Cluster        string    `json:"cluster"`
	Replica        string    `json:"replica"`
	ElectedAt      time.Time `json:"elected_at"`
	LastSeen       time.Time `json:"last_seen"`
	ElectedChanges int64     `json:"elected_changes"`
	// UpdateIn and FailoverIn: how long until the last-seen time is
	// written again, and until another replica may be elected, as of
	// now (negative: due).
	UpdateIn   string `json:"update_in"`
	FailoverIn string `json:"failover_in"`
}

var page = template.Must(template.New("ha").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>promhbase HA tracker</title></head>
<body>
<h1>HA tracker</h1>
<p>Cluster label <code>{{.ClusterLabel}}</code>, replica label <code>{{.ReplicaLabel}}</code>; failover after {{.Failover}} without a write from the elected replica. Current time: {{.Now}}.</p>
<table border="1" cellpadding="4">
<tr><th>Tenant</th><th>Cluster</th><th>Elected replica</th><th>Elected at</th><th>Last seen</th><th>Changes</th><th>Update in</th><th>Failover in</th></tr>
{{range .Elections}}<tr><td>{{.Tenant}}</td><td>{{.Cluster}}</td><td>{{.Replica}}</td><td>{{.ElectedAt.Format "2006-01-02T15:04:05.000Z07:00"}}</td><td>{{.LastSeen.Format "2006-01-02T15:04:05.000Z07:00"}}</td><td>{{.ElectedChanges}}</td><td>{{.UpdateIn}}</td><td>{{.FailoverIn}}</td></tr>
{{else}}<tr><td colspan="8">no elections</td></tr>
{{end}}</table>
</body></html>
`))

// Handler serves the elections as stored (every promhbase process shows
// the same), as Mimir's /distributor/ha_tracker: an HTML table, or JSON
// when the request accepts application/json or asks ?format=json.
func (t *Tracker) Handler(logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		es, err := t.Elections(r.Context())
		if err != nil {
			logger.Warn("ha tracker page", "err", err)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		now := t.cfg.Now()
		views := make([]electionView, 0, len(es))
		for _, e := range es {
			seen := time.UnixMilli(e.ReceivedAt).UTC()
			views = append(views, electionView{Tenant: e.Tenant, Cluster: e.Cluster, Replica: e.Replica,
				ElectedAt: time.UnixMilli(e.ElectedAt).UTC(), LastSeen: seen, ElectedChanges: e.ElectedChanges,
				UpdateIn:   seen.Add(t.cfg.UpdateTimeout).Sub(now).Round(time.Millisecond).String(),
				FailoverIn: seen.Add(t.cfg.FailoverTimeout).Sub(now).Round(time.Millisecond).String()})
		}
		if r.URL.Query().Get("format") == "json" || strings.Contains(r.Header.Get("Accept"), "application/json") {
			w.Header().Set("Content-Type", "application/json")
			if err := json.NewEncoder(w).Encode(map[string]any{"elections": views}); err != nil {
				logger.Debug("ha tracker page", "err", err)
			}
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		err = page.Execute(w, map[string]any{"ClusterLabel": t.cfg.ClusterLabel, "ReplicaLabel": t.cfg.ReplicaLabel,
			"Failover": t.cfg.FailoverTimeout, "Now": now.UTC().Format(time.RFC3339), "Elections": views})
		if err != nil {
			logger.Debug("ha tracker page", "err", fmt.Errorf("render: %w", err))
		}
	})
}
