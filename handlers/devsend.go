package handlers

import (
	"cmp"
	"net/http"
	"time"

	"github.com/redrive/redrive/queue"
)

type devSendRequest struct {
	Queue    string `json:"queue"`
	Messages []struct {
		Body string `json:"body"`
		// ContentType is text (the default), json (body is JSON text) or
		// bytes (body is base64).
		ContentType  queue.ContentType `json:"content_type"`
		DelaySeconds int               `json:"delay_seconds"`
	} `json:"messages"`
}

// devSend puts messages on any queue DevSender has a producer binding for.
// It exists only when API.DevSender is set (see there).
func (a *API) devSend(w http.ResponseWriter, r *http.Request) error {
	var req devSendRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Queue == "" || len(req.Messages) == 0 || len(req.Messages) > 100 {
		return badRequest("INVALID_REQUEST", "queue and 1..100 messages are required")
	}
	out := make([]queue.Outgoing, len(req.Messages))
	for i, m := range req.Messages {
		ct := cmp.Or(m.ContentType, queue.Text)
		if ct != queue.Text && ct != queue.JSON && ct != queue.Bytes {
			return badRequest("INVALID_REQUEST", "content_type must be text, json or bytes")
		}
		out[i] = queue.Outgoing{Body: m.Body, ContentType: ct, Delay: time.Duration(m.DelaySeconds) * time.Second}
	}
	if err := a.DevSender.SendBatch(r.Context(), req.Queue, out); err != nil {
		return err
	}
	respond(w, r, http.StatusOK, map[string]int{"sent": len(out)})
	return nil
}
