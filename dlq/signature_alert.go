package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/internal/text"
)

// NewFailureSignature is the announcement dlq_new_failure_signature: once
// per failure signature, the first time it is seen, with its text and a
// sample row id, so a new kind of failure is known within one cron
// interval. Its state is dlq_signatures.announced_at (durable, claimed by
// one conditional UPDATE). With nothing new it reads no row but the
// partial index idx_dlq_signatures_unannounced.
type NewFailureSignature struct {
	DB *sql.DB
}

// announceBatch bounds the signatures announced per run (the rest next run).
const announceBatch = 20

// Name implements alerts.Announcer.
func (NewFailureSignature) Name() string { return "dlq_new_failure_signature" }

// Claim implements alerts.Announcer.
func (n NewFailureSignature) Claim(ctx context.Context, now time.Time) ([]alerts.Announcement, error) {
	rows, err := n.DB.QueryContext(ctx, `UPDATE dlq_signatures SET announced_at = ?
		WHERE signature IN (SELECT signature FROM dlq_signatures WHERE announced_at IS NULL ORDER BY first_seen LIMIT ?)
			AND announced_at IS NULL
		RETURNING signature, class, text, sample_ids, pending + replaying + replayed + acknowledged AS total`, now.UnixMilli(), int64(announceBatch))
	if err != nil {
		return nil, fmt.Errorf("claim new signatures: %w", err)
	}
	defer rows.Close()
	var out []alerts.Announcement
	for rows.Next() {
		var sig, class, txt, samples string
		var total int64
		if err := rows.Scan(&sig, &class, &txt, &samples, &total); err != nil {
			return nil, fmt.Errorf("claim new signatures: %w", err)
		}
		var ids []float64
		_ = json.Unmarshal([]byte(samples), &ids)
		sample := "no row yet"
		if len(ids) > 0 {
			sample = fmt.Sprintf("e.g. row %d", int64(ids[0]))
		}
		d := fmt.Sprintf("new failure signature %s (%s): %q, %s (%d rows so far)", sig, class, text.Clip(txt, 200), sample, total)
		if replayWillFail(class) {
			d += "; replaying it unchanged fails again"
		}
		out = append(out, alerts.Announcement{Key: sig, Detail: d})
	}
	return out, rows.Err()
}

// Release implements alerts.Announcer.
func (n NewFailureSignature) Release(ctx context.Context, key string, now time.Time) error {
	_, err := n.DB.ExecContext(ctx, `UPDATE dlq_signatures SET announced_at = NULL WHERE signature = ? AND announced_at = ?`, key, now.UnixMilli())
	return err
}
