package dlq

import (
	"database/sql"
	"strings"

	"github.com/redrive/redrive/sqlbatch"
)

// The statements that move many rows at once (acknowledge, replay claim and
// settle) keep dlq_tally, dlq_activity and their counters themselves, in
// the same batch as the UPDATE and before it: one row written per group of
// rows (status, source queue, label_2; hour) instead of one per row, which
// is what the per-row triggers of migrations/0012 would cost. Their UPDATE
// increments tally_seq (SetTallied), which tells those triggers to leave
// the rows alone. Each helper reads the rows about to change through cond
// (the UPDATE's own condition, with its arguments).

// SetTallied is the SET term of an UPDATE whose batch keeps the counts.
const SetTallied = `tally_seq = tally_seq + 1`

// LabelKeySQL is dlq_tally.label_key of a row whose status is the SQL
// expression status.
func LabelKeySQL(status string) string {
	return `CASE WHEN ` + status + ` = 'pending' AND label_2 IS NOT NULL THEN '=' || label_2 ELSE '' END`
}

// TallyMove returns the statement that moves the counts of the rows matching
// cond from their (status, source_queue, label_2) to newStatus, an SQL
// expression over the row ('acknowledged', or a CASE).
func TallyMove(cond string, args []any, newStatus string) sqlbatch.Stmt {
	return sqlbatch.Stmt{SQL: `INSERT INTO dlq_tally(status, source_queue, label_key, n)
		SELECT s, q, b, SUM(d) FROM (
			SELECT status AS s, source_queue AS q, ` + LabelKeySQL("status") + ` AS b, -1 AS d FROM dlq_messages WHERE ` + cond + `
			UNION ALL SELECT ` + newStatus + `, source_queue, ` + LabelKeySQL("("+newStatus+")") + `, 1 FROM dlq_messages WHERE ` + cond + `)
		WHERE true GROUP BY s, q, b HAVING SUM(d) <> 0
		ON CONFLICT(status, source_queue, label_key) DO UPDATE SET n = n + excluded.n`,
		Args: append(append([]any(nil), args...), args...)}
}

// ActivityAdd returns the statement that adds the rows matching cond to
// dlq_activity's buckets of kind for the hour of at (epoch ms), one per
// source queue among them.
func ActivityAdd(kind string, at int64, cond string, args []any) sqlbatch.Stmt {
	return sqlbatch.Stmt{SQL: `INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
		SELECT ?, CAST(? AS INTEGER) / 3600000, source_queue, COUNT(*), 0 FROM dlq_messages WHERE ` + cond + ` GROUP BY source_queue
		ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + excluded.n`,
		Args: append([]any{kind, at}, args...)}
}

// CounterAdd returns the statement that adds the number of rows matching
// cond to the counter name.
func CounterAdd(name, cond string, args []any) sqlbatch.Stmt {
	return sqlbatch.Stmt{SQL: `INSERT INTO counters(name, value)
		SELECT ?, COUNT(*) FROM dlq_messages WHERE ` + cond + ` HAVING COUNT(*) > 0
		ON CONFLICT(name) DO UPDATE SET value = value + excluded.value`,
		Args: append([]any{name}, args...)}
}

// BatchOf is r, or a transaction on db when r is nil (native tests).
func BatchOf(r sqlbatch.Runner, db *sql.DB) sqlbatch.Runner {
	if r == nil {
		return sqlbatch.Tx{DB: db}
	}
	return r
}

// SignatureMove returns the statement that moves the rows matching cond
// from their status to newStatus in their signatures' counts
// (dlq_signatures), one row written per signature among them. statuses are
// the counts that can change (the rows' status and every newStatus can
// give): only they are set, so a move that leaves pending alone does not
// rewrite idx_dlq_signatures_pending's entries.
func SignatureMove(cond string, args []any, newStatus string, statuses ...string) sqlbatch.Stmt {
	var set, sums, changed []string
	for _, st := range statuses {
		set = append(set, st+" = "+st+" + c.d_"+st)
		sums = append(sums, "SUM((ns = '"+st+"') - (os = '"+st+"')) AS d_"+st)
		changed = append(changed, "c.d_"+st+" <> 0")
	}
	return sqlbatch.Stmt{SQL: `UPDATE dlq_signatures SET ` + strings.Join(set, ", ") + `
		FROM (SELECT sig, ` + strings.Join(sums, ", ") + `
			FROM (SELECT signature AS sig, status AS os, ` + newStatus + ` AS ns FROM dlq_messages WHERE ` + cond + `)
			WHERE sig IS NOT NULL GROUP BY sig) AS c
		WHERE dlq_signatures.signature = c.sig AND (` + strings.Join(changed, " OR ") + `)`,
		Args: append([]any(nil), args...)}
}
