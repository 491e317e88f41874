package upkeep

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/text"
)

// NewFailureSignature is the announcement dlq_new_failure_signature: once
// per failure signature, the first time it is seen, with its text and a
// sample row id, so a new kind of failure is known within one cron
// interval. Its state is durable: a run claims a signature
// (dlq_signatures.announce_claimed_at, one conditional UPDATE) for
// announceLease, and marks it sent (announced_at) only after the webhook took
// it; a run that dies in between leaves the claim to lapse, and a later run
// sends it (at least once, never lost). With nothing new it reads no row but
// the partial index idx_dlq_signatures_unannounced.
type NewFailureSignature struct {
	DB *sql.DB
	// Database is DB's binding (JobName names the announcement).
	Database string
	// Pipelines name the queues in the announcement (nil: the beer one).
	Pipelines dlq.Pipelines
}

// announceBatch bounds the signatures announced per run (the rest next run).
const announceBatch = 20

// announceLease is how long a claim holds: longer than any run (a Worker's
// scheduled event ends within 15 minutes), so overlapping runs never send
// the same signature twice.
const announceLease = 15 * time.Minute

// unclaimedSQL: a signature not announced and not held by a claim within
// its lease (?2: the claim time, ?3: announceLease in ms).
const unclaimedSQL = `announced_at IS NULL AND (announce_claimed_at IS NULL OR announce_claimed_at <= ?2 - ?3)`

// Name implements alerts.Announcer.
func (n NewFailureSignature) Name() string {
	return dlq.JobName("dlq_new_failure_signature", n.Database)
}

// Claim implements alerts.Announcer.
func (n NewFailureSignature) Claim(ctx context.Context, now time.Time) ([]alerts.Announcement, error) {
	rows, err := n.DB.QueryContext(ctx, `UPDATE dlq_signatures SET announce_claimed_at = ?2
		WHERE signature IN (SELECT signature FROM dlq_signatures WHERE `+unclaimedSQL+` ORDER BY first_seen LIMIT ?1)
			AND `+unclaimedSQL+`
		RETURNING signature, class, text, sample_ids, pending + replaying + replayed + acknowledged AS total, source_queue`,
		int64(announceBatch), now.UnixMilli(), announceLease.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("claim new signatures: %w", err)
	}
	defer rows.Close()
	var out []alerts.Announcement
	for rows.Next() {
		var sig, class, txt, samples, queue string
		var total int64
		if err := rows.Scan(&sig, &class, &txt, &samples, &total, &queue); err != nil {
			return nil, fmt.Errorf("claim new signatures: %w", err)
		}
		var ids []float64
		_ = json.Unmarshal([]byte(samples), &ids)
		sample := "no row yet"
		if len(ids) > 0 {
			sample = fmt.Sprintf("e.g. row %d", int64(ids[0]))
		}
		where := "queue " + queue
		if p, ok := n.Pipelines.OfQueue(queue); ok {
			where = "pipeline " + p.Name
		}
		d := fmt.Sprintf("new failure signature %s (%s) in %s: %q, %s (%d rows so far)", sig, class, where, text.Clip(txt, 200), sample, total)
		if dlq.ReplayWillFail(class) {
			d += "; replaying it unchanged fails again"
		}
		out = append(out, alerts.Announcement{Key: sig, Detail: d})
	}
	return out, rows.Err()
}

// Done implements alerts.Announcer: the signature was sent at now.
func (n NewFailureSignature) Done(ctx context.Context, key string, now time.Time) error {
	if _, err := n.DB.ExecContext(ctx, `UPDATE dlq_signatures SET announced_at = ?2, announce_claimed_at = NULL
		WHERE signature = ?1 AND announced_at IS NULL`, key, now.UnixMilli()); err != nil {
		return fmt.Errorf("mark signature %s announced: %w", key, err)
	}
	return nil
}

// Release implements alerts.Announcer: the claims at now of keys end (one statement).
func (n NewFailureSignature) Release(ctx context.Context, keys []string, now time.Time) error {
	js, _ := json.Marshal(keys) // a []string always marshals
	if _, err := n.DB.ExecContext(ctx, `UPDATE dlq_signatures SET announce_claimed_at = NULL
		WHERE signature IN (SELECT value FROM json_each(?1)) AND announce_claimed_at = ?2 AND announced_at IS NULL`,
		string(js), now.UnixMilli()); err != nil {
		return fmt.Errorf("release signature claims: %w", err)
	}
	return nil
}
