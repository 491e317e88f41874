package dlq

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
)

// Views over every pipeline when a pipeline keeps its rows in a database
// of its own: the list, export, groups and audit pages read each
// database after its own position, at most one single-database page from
// each, and merge them (mergeTake); their cursors carry a position per
// database (spots). Stats and the time series add each database's figures
// up. docs/pipelines.md "Its own database".

// spot is one database's position in a merged cursor: the last row of it
// a page listed (T and I: the listing's keys, S the group signature), or
// nothing yet (I is 0 and S empty), or Done (it has no row after).
type Spot struct {
	T    int64  `json:"t,omitempty"`
	I    int64  `json:"i,omitempty"`
	S    string `json:"s,omitempty"`
	Done bool   `json:"d,omitempty"`
}

// started reports whether the spot names a row (a page listed one of it).
func (s Spot) Started() bool { return s.I != 0 || s.S != "" }

// merged is the cursor kind of a listing's merged form: a cursor of the
// single-database form is not one of the merged form, nor the reverse.
func Merged(kind string) string { return kind + "*" }

// mergedFilter is fp bound to the databases read: a cursor made before a
// binding was added or removed is INVALID_CURSOR, not a walk that skips a
// database.
func MergedFilter(fp string, d Databases) string {
	names := make([]string, len(d.All))
	for i, db := range d.All {
		names[i] = db.Name
	}
	sum := sha256.Sum256([]byte(strings.Join(names, "\x00")))
	return fp + "@" + hex.EncodeToString(sum[:4])
}

// decodeSpots returns the spots of a merged cursor for kind and fp over d
// (one per database; every one unstarted for the first page, cursor "").
func (c Cursors) DecodeSpots(cursor, kind, fp string, d Databases) (Position, error) {
	if cursor == "" {
		return Position{Spots: make([]Spot, len(d.All))}, nil
	}
	p, err := c.Decode(cursor, Merged(kind), MergedFilter(fp, d))
	if err != nil {
		return Position{}, err
	}
	if len(p.Spots) != len(d.All) {
		return Position{}, InputErr("INVALID_CURSOR", "cursor is not valid here: malformed; use next_cursor from a previous response with the same filters")
	}
	for _, s := range p.Spots {
		if s.I < 0 || s.T < 0 || (s.S != "" && !ValidSignatureKey(s.S)) {
			return Position{}, InputErr("INVALID_CURSOR", "cursor is not valid here: malformed; use next_cursor from a previous response with the same filters")
		}
	}
	return p, nil
}

// encodeSpots is the next cursor of a merged page: p with its spots,
// or nil when every database is done.
func (c Cursors) EncodeSpots(p Position, kind, fp string, d Databases) *string {
	more := false
	for _, s := range p.Spots {
		more = more || !s.Done
	}
	if !more {
		return nil
	}
	p.Kind, p.Filter, p.ID = Merged(kind), MergedFilter(fp, d), 1
	next := c.Encode(p)
	return &next
}

// stream is what one database gave for a merged page: its next rows in
// the listing's order and whether it has rows after them.
type Stream[T any] struct {
	Rows []T
	More bool
}

// MergeTake merges streams (each already in the listing's order; before
// says whether a comes first) into at most limit rows and returns them with
// how many rows of each stream they hold. It stops early when a stream that
// has more rows than it gave runs out: its next row, unread, might come
// before the other streams' rows. Every row of each stream before the
// returned count is listed, so a walk resuming each stream after its last
// listed row lists every row of every stream exactly once.
func MergeTake[T any](streams []Stream[T], limit int, before func(a, b T) bool) ([]T, []int) {
	taken := make([]int, len(streams))
	var out []T
	for len(out) < limit {
		best := -1
		for i, s := range streams {
			if taken[i] == len(s.Rows) {
				if s.More {
					return out, taken
				}
				continue
			}
			if best < 0 || before(s.Rows[taken[i]], streams[best].Rows[taken[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out = append(out, streams[best].Rows[taken[best]])
		taken[best]++
	}
	return out, taken
}

// advance moves each database's spot past the rows of it a page listed:
// at of its last listed row, unchanged when it listed none, Done when it
// listed every row it has. Databases already done stay so.
func Advance[T any](spots []Spot, streams []Stream[T], taken []int, at func(T) Spot) {
	for i, s := range streams {
		if spots[i].Done {
			continue
		}
		if taken[i] > 0 {
			spots[i] = at(s.Rows[taken[i]-1])
		}
		if taken[i] == len(s.Rows) && !s.More {
			spots[i].Done = true
		}
	}
}

// DBOf is the connection of the database a view with a pipeline or source
// queue filter reads (d empty: db, the services' own DB).
func DBOf(d Databases, db *sql.DB, pipeline, sourceQueue string) *sql.DB {
	if len(d.All) == 0 {
		return db
	}
	return d.Viewed(pipeline, sourceQueue).DB
}

// Viewed is the database a view with a pipeline or source queue filter
// reads: the source queue's, else the pipeline's (the shared one when
// neither is set).
func (d Databases) Viewed(pipeline, sourceQueue string) Database {
	if sourceQueue != "" {
		return d.OfQueue(sourceQueue)
	}
	return d.OfPipeline(pipeline)
}

// pageMerged is Audit.Page over every database: at most p.Limit + 1
// entries from each database not done, after its spot (ids below it),
// merged newest first by time, then id.
func (a Audit) pageMerged(ctx context.Context, p AuditParams, fp string) (AuditPage, error) {
	pos, err := a.Cursors.DecodeSpots(p.Cursor, CursorAudit, fp, a.DBs)
	if err != nil {
		return AuditPage{}, err
	}
	streams := make([]Stream[AuditEntry], len(a.DBs.All))
	for i, d := range a.DBs.All {
		if pos.Spots[i].Done {
			continue
		}
		entries, err := ReadAudit(ctx, d.DB, p, pos.Spots[i].I)
		if err != nil {
			return AuditPage{}, fmt.Errorf("%s: %w", d.Name, err)
		}
		streams[i] = Stream[AuditEntry]{Rows: entries[:min(len(entries), p.Limit)], More: len(entries) > p.Limit}
	}
	entries, taken := MergeTake(streams, p.Limit, func(x, y AuditEntry) bool {
		return x.At > y.At || (x.At == y.At && x.ID > y.ID)
	})
	Advance(pos.Spots, streams, taken, func(e AuditEntry) Spot { return Spot{I: e.ID} })
	out := AuditPage{Entries: append([]AuditEntry{}, entries...), Limit: p.Limit}
	out.NextCursor = a.Cursors.EncodeSpots(pos, CursorAudit, fp, a.DBs)
	out.HasMore = out.NextCursor != nil
	return out, nil
}
