package dlq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// elsewhere is the Stores that knows the databases still holding rows of
// a queue stored elsewhere now (Databases: a pipeline moving to its own
// database).
type elsewhere interface {
	Elsewhere(ctx context.Context, q string) ([]Database, error)
}

// lookAsideSQL finds, in a database that still holds rows of a moving
// pipeline, what each failure of a batch (elements: message_id, source,
// hash, as ensureSignaturesSQL's) is to the rows there, as putSQL would
// find it: stored (its message_id is a row's, or a row's last failure is
// this message: a DLQ redelivery), or the lineage row it continues (a
// repeat failure of a replayed message, putSQL's second subquery). Only
// failures that are one or the other are returned. It reads, per failure,
// one message_id index entry and the lineage index's entries of its body.
const lookAsideSQL = `WITH elems AS MATERIALIZED (SELECT value ->> '$.message_id' AS message_id, value ->> '$.source' AS source,
		value ->> '$.hash' AS hash FROM json_each(?))
	SELECT message_id, stored, lineage FROM (SELECT j.message_id AS message_id,
		EXISTS (SELECT 1 FROM dlq_messages f WHERE f.message_id = j.message_id)
			OR EXISTS (SELECT 1 FROM dlq_messages d WHERE d.source_queue = j.source AND d.body_hash = j.hash AND ` + lineageIndexCond + `
				AND d.last_message_id = j.message_id) AS stored,
		(SELECT json_object('id', d.id, 'message_id', d.message_id, 'replay_count', d.replay_count + (d.status = 'replaying'),
				'first_failed_at', d.first_failed_at, 'history', json(d.history), 'history_dropped', d.history_dropped)
			FROM dlq_messages d WHERE d.source_queue = j.source AND d.body_hash = j.hash AND ` + lineageIndexCond + `
				AND d.status <> 'acknowledged'
			ORDER BY d.status IN ('replaying', 'replayed') DESC, d.id DESC LIMIT 1) AS lineage
		FROM elems AS j)
	WHERE stored OR lineage IS NOT NULL`

// errLookAside marks a failure to ask another database during a move: the
// capture treats it as an unavailable D1 (retried with backoff, never acked
// nor stored without the answer, which could store a message twice).
var errLookAside = errors.New("another database holding rows of the queue did not answer")

// lookAside keeps each message one row wherever its pipeline's rows lie
// during a move (docs/operations.md, Move a pipeline to its own
// database). Before a batch of source queue q is stored in q's database,
// the other databases that still hold rows of q (Databases.Elsewhere: none
// once a move ends, known per isolate without a read) are asked about its
// failures (lookAsideSQL, one statement each): a failure stored there
// already is a duplicate (dups: acked without a write); a repeat failure
// of a row there is stored in q's database as that row's continuation
// (its encoded element borrows the row: see encoded.borrowing and
// rekeySQL), so that the frozen row there (Databases.Frozen) stays what its export copied,
// and the import merges the two by message_id and id. fs and encs come
// back without the duplicates.
func (c *Capture) lookAside(ctx context.Context, q string, fs []Failure, encs []encoded) ([]Failure, []encoded, []string, error) {
	el, ok := c.Stores.(elsewhere)
	if !ok || len(fs) == 0 {
		return fs, encs, nil, nil
	}
	others, err := el.Elsewhere(ctx, q)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", errLookAside, err)
	}
	if len(others) == 0 {
		return fs, encs, nil, nil
	}
	a := asideAnswers{dup: map[string]bool{}, borrow: map[string][]byte{}}
	for _, o := range others {
		keys := a.unanswered(fs, encs)
		if len(keys) == 0 {
			break
		}
		if err := a.lookIn(ctx, o, keys); err != nil {
			return nil, nil, nil, err
		}
	}
	keptF, keptE, dups := a.apply(fs, encs)
	return keptF, keptE, dups, nil
}

// asideAnswers are what the other databases answered about a batch's
// failures, by message_id: stored there already (dup), or the lineage row
// there that the failure continues (borrow, lookAsideSQL's).
type asideAnswers struct {
	dup    map[string]bool
	borrow map[string][]byte
}

// unanswered is the key elements (see encoded) of the failures of fs
// (encoded as encs) that no database has answered about yet.
func (a asideAnswers) unanswered(fs []Failure, encs []encoded) [][]byte {
	keys := make([][]byte, 0, len(encs))
	for i, e := range encs {
		if !a.dup[fs[i].MessageID] && a.borrow[fs[i].MessageID] == nil {
			keys = append(keys, e.key)
		}
	}
	return keys
}

// lookIn asks database o about the failures of keys (lookAsideSQL) and
// records its answers in a; an error is errLookAside's.
func (a asideAnswers) lookIn(ctx context.Context, o Database, keys [][]byte) error {
	rows, err := o.DB.QueryContext(ctx, lookAsideSQL, string(joinJSON(keys)))
	if err != nil {
		return fmt.Errorf("%w: dlq store: look in %s: %w", errLookAside, o.Name, err)
	}
	for rows.Next() {
		var id string
		var stored bool
		var lineage sql.NullString
		if err := rows.Scan(&id, &stored, &lineage); err != nil {
			rows.Close()
			return fmt.Errorf("%w: dlq store: look in %s: %w", errLookAside, o.Name, err)
		}
		switch {
		case stored:
			a.dup[id] = true
		case lineage.Valid:
			a.borrow[id] = []byte(lineage.String)
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("%w: dlq store: look in %s: %w", errLookAside, o.Name, err)
	}
	return nil
}

// apply is fs and encs without the duplicates, each repeat failure's
// element borrowing its lineage row (encoded.borrowing), and the
// duplicates' message_ids.
func (a asideAnswers) apply(fs []Failure, encs []encoded) ([]Failure, []encoded, []string) {
	var dups []string
	keptF, keptE := fs[:0:0], encs[:0:0]
	for i, f := range fs {
		if a.dup[f.MessageID] {
			dups = append(dups, f.MessageID)
			continue
		}
		e := encs[i]
		if b := a.borrow[f.MessageID]; b != nil {
			e = e.borrowing(f.MessageID, b)
		}
		keptF, keptE = append(keptF, f), append(keptE, e)
	}
	return keptF, keptE, dups
}

// borrowing is e with the lineage row b (lookAsideSQL's) as its put
// element's borrow and as its rekey element.
func (e encoded) borrowing(messageID string, b []byte) encoded {
	put := make([]byte, 0, len(e.put)+len(b)+16)
	put = append(put, e.put[:len(e.put)-1]...) // without its closing brace
	put = append(append(append(put, `,"borrow":`...), b...), '}')
	e.put = put
	r := member(nil, '{', "message_id", messageID)
	e.borrow = append(append(append(r, `,"borrow":`...), b...), '}')
	return e
}

// save stores fs (encoded as encs) in source queue q's database, after
// lookAside: the outcome of every failure, duplicates included.
func (c *Capture) save(ctx context.Context, q string, fs []Failure, encs []encoded) (map[string]Outcome, error) {
	kept, keptEncs, dups, err := c.lookAside(ctx, q, fs, encs)
	if err != nil {
		return nil, err
	}
	out, err := c.store(q).saveEncoded(ctx, kept, keptEncs)
	if err != nil {
		return nil, err
	}
	for _, id := range dups {
		out[id] = OutcomeDuplicate
	}
	return out, nil
}

// saveOne is save of one failure, encoded here.
func (c *Capture) saveOne(ctx context.Context, f Failure) (map[string]Outcome, error) {
	e, err := encodeFailure(f, c.store(f.SourceQueue).Pipelines)
	if err != nil {
		return nil, fmt.Errorf("dlq store encode: %w", err)
	}
	return c.save(ctx, f.SourceQueue, []Failure{f}, []encoded{e})
}
