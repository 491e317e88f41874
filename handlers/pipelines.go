package handlers

import (
	"net/http"
	"time"

	"github.com/redrive/redrive/config"
)

// pipelineView is one configured pipeline as GET /admin/pipelines shows it
// (Pipeline in handlers/openapi.json).
type pipelineView struct {
	Name     string `json:"name"`
	Queue    string `json:"queue"`
	DLQ      string `json:"dlq"`
	Producer string `json:"producer"`
	// ProducerBound is false when the producer binding is missing: the
	// pipeline is capture-only (replay to it is refused).
	ProducerBound         bool           `json:"producer_bound"`
	Key                   string         `json:"key"`
	Labels                []config.Label `json:"labels"`
	Consumer              string         `json:"consumer"`
	AlertPendingThreshold int64          `json:"alert_pending_threshold"`
	AlertOldestHours      int64          `json:"alert_oldest_hours"`
	RetentionDays         int64          `json:"retention_days"`
	// Database is the D1 binding holding its rows.
	Database string `json:"database"`
}

// pipelinesList serves GET /admin/pipelines: every configured pipeline
// (var PIPELINES), in configuration order, for the console's and the CLI's
// pipeline selector. It reads nothing from D1.
func (a *API) pipelinesList(w http.ResponseWriter, r *http.Request) error {
	out := []pipelineView{}
	scope := scopeOf(r)
	for _, p := range a.databases().Pipelines().All() {
		if !scope.Reaches(p.Name) {
			continue
		}
		_, missing := a.MissingProducers[p.Queue]
		labels := p.Labels
		if labels == nil {
			labels = []config.Label{}
		}
		out = append(out, pipelineView{Name: p.Name, Queue: p.Queue, DLQ: p.DLQ, Producer: p.Producer, ProducerBound: !missing,
			Key: p.Key, Labels: labels, Consumer: p.Consumer, AlertPendingThreshold: p.AlertPendingThreshold,
			AlertOldestHours: int64(p.AlertOldestPending / time.Hour), RetentionDays: int64(p.Retention / (24 * time.Hour)),
			Database: p.Database})
	}
	respond(w, r, http.StatusOK, map[string]any{"pipelines": out})
	return nil
}
