package handlers

import (
	"errors"
	"net/http"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/incidents"
	"github.com/redrive/redrive/internal/text"
)

// outbox is the events' outbox (alerts.Outbox): Outbox, or one in DB that
// records events and delivers none (native tests).
func (a *API) outbox() *alerts.Outbox {
	if a.Outbox != nil {
		return a.Outbox
	}
	return &alerts.Outbox{DB: a.DB, Batch: dlq.BatchOf(a.Batch, a.DB), Log: a.Log}
}

// groupStatus serves POST /admin/dlq/groups/{signature}/status: a failure
// group's incident status, audited as group_status with its event.
func (a *API) groupStatus(w http.ResponseWriter, r *http.Request) error {
	var c incidents.Change
	if err := decodeJSON(w, r, &c); err != nil {
		return err
	}
	g := incidents.Groups{DBs: a.databases(), Outbox: a.outbox(), Audit: a.auditLog()}
	res, err := g.Set(r.Context(), r.PathValue("signature"), c, a.requester(r), a.Clock.Now())
	if errors.Is(err, incidents.ErrGroupNotFound) {
		return &APIError{Status: http.StatusNotFound, Code: "GROUP_NOT_FOUND",
			Message: "no failure group has signature " + quote(text.Clip(r.PathValue("signature"), maxEcho))}
	}
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, res)
	return nil
}

// alertEvents serves GET /admin/alerts/events: the newest events with
// their deliveries, and the channels.
func (a *API) alertEvents(w http.ResponseWriter, r *http.Request) error {
	q, limit, err := pageQuery(r)
	if err != nil {
		return err
	}
	if limit == 0 {
		limit = dlq.DefaultListLimit
	}
	failed, err := queryBool(q, "failed")
	if err != nil {
		return err
	}
	l, err := a.outbox().List(r.Context(), limit, failed)
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, l)
	return nil
}

// channelEnable serves POST /admin/alerts/channels/{name}/enable: a channel
// a 410 disabled takes deliveries again (its failed ones stay failed).
func (a *API) channelEnable(w http.ResponseWriter, r *http.Request) error {
	if err := decodeEmptyBody(w, r); err != nil {
		return err
	}
	o, name := a.outbox(), r.PathValue("name")
	known := false
	for _, c := range o.Channels {
		known = known || c.Name == name
	}
	if !known {
		return &APIError{Status: http.StatusNotFound, Code: "CHANNEL_NOT_FOUND",
			Message: "no channel of ALERT_CHANNELS is named " + quote(text.Clip(name, maxEcho))}
	}
	was, err := o.Enable(r.Context(), name)
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, map[string]any{"channel": name, "was_disabled": was, "enabled": true})
	return nil
}
