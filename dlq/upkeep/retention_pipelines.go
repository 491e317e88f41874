package upkeep

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redrive/redrive/jobs"
)

// ageGroup is the pipelines that share one retention shorter than the
// longest: their acknowledged/replayed rows are deleted once their action
// time is before now - keep. Queues lists their source queues (in), or,
// for the group of DLQ_RETENTION_DAYS, the queues of every other retention
// (not in: unconfigured queues follow DLQ_RETENTION_DAYS).
type ageGroup struct {
	keep   time.Duration
	queues []string
	notIn  bool
}

// key names the group in the summary's age_scanned_to: its retention and
// its queues, so a changed PIPELINES starts the group's window over.
func (g ageGroup) key() string {
	mode := "in"
	if g.notIn {
		mode = "not_in"
	}
	return fmt.Sprintf("%dd:%s:%s", g.keep/(24*time.Hour), mode, strings.Join(g.queues, ","))
}

// longest is the longest retention in effect (DLQ_RETENTION_DAYS or a
// pipeline's retention_days): rows past it are deleted whatever their queue.
func (r *Retention) longest() time.Duration {
	l := r.MaxAge
	for _, p := range r.Pipelines {
		l = max(l, p.Retention)
	}
	return l
}

// ageGroups is one group per distinct retention shorter than longest, in
// retention order (the shortest first).
func (r *Retention) ageGroups(longest time.Duration) []ageGroup {
	byKeep := map[time.Duration][]string{}
	for _, p := range r.Pipelines {
		if p.Retention > 0 && p.Retention != r.MaxAge {
			byKeep[p.Retention] = append(byKeep[p.Retention], p.Queue)
		}
	}
	var groups []ageGroup
	for keep, qs := range byKeep {
		if keep < longest {
			sort.Strings(qs)
			groups = append(groups, ageGroup{keep: keep, queues: qs})
		}
	}
	if r.MaxAge < longest {
		var others []string
		for _, qs := range byKeep {
			others = append(others, qs...)
		}
		sort.Strings(others)
		groups = append(groups, ageGroup{keep: r.MaxAge, queues: others, notIn: true})
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].keep < groups[j].keep })
	return groups
}

// ageWindowChunkSQL is the action time of the ?3-th terminal row whose
// action time is in [?1, ?2), in action-time order (a merge of
// idx_dlq_status_acknowledged_at and idx_dlq_status_replayed_at, reading
// up to ?3 entries of each and no table row), and how many there are up to
// it.
const ageWindowChunkSQL = `SELECT MAX(t), COUNT(*) FROM (
	SELECT acknowledged_at AS t FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at >= ?1 AND acknowledged_at < ?2
	UNION ALL SELECT replayed_at FROM dlq_messages WHERE status = 'replayed' AND replayed_at >= ?1 AND replayed_at < ?2
	ORDER BY 1 LIMIT ?3)`

// The deletes of one chunk: the terminal rows of one status whose action
// time is in [?1, ?2), through that status's index (a range of it), whose
// source_queue is (not) in the JSON array ?3 (read from the row: one row
// read per entry of the range). No index is led by source_queue: each
// would be one more entry written by every acknowledge and replay.
const (
	ageWindowAckInSQL = `DELETE FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at >= ?1 AND acknowledged_at < ?2
	AND +source_queue IN (SELECT value FROM json_each(?3))`
	ageWindowAckNotInSQL = `DELETE FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at >= ?1 AND acknowledged_at < ?2
	AND +source_queue NOT IN (SELECT value FROM json_each(?3))`
	ageWindowReplayedInSQL = `DELETE FROM dlq_messages WHERE status = 'replayed' AND replayed_at >= ?1 AND replayed_at < ?2
	AND +source_queue IN (SELECT value FROM json_each(?3))`
	ageWindowReplayedNotInSQL = `DELETE FROM dlq_messages WHERE status = 'replayed' AND replayed_at >= ?1 AND replayed_at < ?2
	AND +source_queue NOT IN (SELECT value FROM json_each(?3))`
)

// expireWindows applies each shorter retention to the rows of its
// pipelines whose action time is in the window between the longest
// retention's cutoff and its own. Each group scans that window forward,
// chunk by chunk of action time, from where its previous run stopped
// (prev, by group key) to its cutoff, so a terminal row is read by a
// group once over the whole time, not once per run: a run reads what
// became due since the previous run (about two rows per terminal row, the
// chunk query's index entry and the delete's row), nothing when nothing
// became due. Every group runs at least one chunk; after that the budget
// stops it with its position kept. It returns the rows deleted, each
// group's position (the action time below which its window is done) and
// whether a group stopped before its cutoff.
func (r *Retention) expireWindows(ctx context.Context, b *jobs.Budget, now time.Time, longestCutoff int64, prev map[string]int64) (deleted int64, scanned map[string]int64, more bool, err error) {
	scanned = map[string]int64{}
	size := r.Limits.Chunk()
	for _, g := range r.ageGroups(r.longest()) {
		to := now.Add(-g.keep).UnixMilli()
		from := longestCutoff
		if p, ok := prev[g.key()]; ok {
			from = max(from, p)
		}
		queues, _ := json.Marshal(g.queues)
		if g.queues == nil {
			queues = []byte("[]")
		}
		ack, replayed := ageWindowAckInSQL, ageWindowReplayedInSQL
		if g.notIn {
			ack, replayed = ageWindowAckNotInSQL, ageWindowReplayedNotInSQL
		}
		for first := true; from < to; first = false {
			if !first && b.Spent() {
				more = true
				break
			}
			var last sql.NullInt64
			var n int64
			if err := r.DB.QueryRowContext(ctx, ageWindowChunkSQL, from, to, size).Scan(&last, &n); err != nil {
				scanned[g.key()] = from
				return deleted, scanned, true, fmt.Errorf("retention: window chunk: %w", err)
			}
			if n == 0 { // nothing in the rest of the window
				from = to
				break
			}
			end := to
			if n >= int64(size) && last.Valid && last.Int64+1 < to {
				end = last.Int64 + 1 // rows sharing the last time belong to this chunk
			}
			for _, q := range []string{ack, replayed} {
				d, err := exec(ctx, r.DB, "retention: delete by pipeline age", q, from, end, string(queues))
				deleted += d
				if err != nil {
					scanned[g.key()] = from
					return deleted, scanned, true, err
				}
			}
			from = end
		}
		scanned[g.key()] = from
	}
	return deleted, scanned, more, nil
}
