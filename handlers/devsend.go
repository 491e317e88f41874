package handlers

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/queue"
)

// DevSender sends POST /__dev/send's messages, to the queues it Sends to.
type DevSender interface {
	queue.Sender
	// Sends reports whether the sender has a producer binding for queueName.
	Sends(queueName string) bool
}

// maxDelaySeconds is the longest delay Cloudflare Queues takes (12 hours).
const maxDelaySeconds = 43_200

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
	if !a.DevSender.Sends(req.Queue) {
		return badRequest("UNKNOWN_QUEUE", fmt.Sprintf("queue %q has no producer binding here (a pipeline's queue, or one DEV_SEND_QUEUES names)", dlq.ClipName(req.Queue)))
	}
	out := make([]queue.Outgoing, len(req.Messages))
	for i, m := range req.Messages {
		ct := cmp.Or(m.ContentType, queue.Text)
		if err := checkDevMessage(ct, m.Body, m.DelaySeconds); err != nil {
			return badRequest("INVALID_REQUEST", fmt.Sprintf("message %d: %s", i, err))
		}
		out[i] = queue.Outgoing{Body: m.Body, ContentType: ct, Delay: time.Duration(m.DelaySeconds) * time.Second}
	}
	if err := a.DevSender.SendBatch(r.Context(), req.Queue, out); err != nil {
		return err
	}
	respond(w, r, http.StatusOK, map[string]int{"sent": len(out)})
	return nil
}

// checkDevMessage says what is wrong with one message of POST /__dev/send:
// an unknown content type, a json body that is not JSON, a bytes body that
// is not base64, or a delay outside 0..maxDelaySeconds.
func checkDevMessage(ct queue.ContentType, body string, delay int) error {
	switch ct {
	case queue.Text:
	case queue.JSON:
		if !json.Valid([]byte(body)) {
			return errors.New("body is not JSON (content_type json)")
		}
	case queue.Bytes:
		if _, err := base64.StdEncoding.DecodeString(body); err != nil {
			return errors.New("body is not base64 (content_type bytes)")
		}
	default:
		return errors.New("content_type must be text, json or bytes")
	}
	if delay < 0 || delay > maxDelaySeconds {
		return fmt.Errorf("delay_seconds must be 0..%d", maxDelaySeconds)
	}
	return nil
}
