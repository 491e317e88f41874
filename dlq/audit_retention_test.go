package dlq

import (
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

func TestAuditRetentionDeletesOldRecords(t *testing.T) {
	db := sqlitetest.New(t)
	// The admin API defines the real table; this one has the columns the job relies on.
	if _, err := db.Exec(`CREATE TABLE audit_log (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at INTEGER NOT NULL, action TEXT)`); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	for _, at := range []time.Time{now.Add(-100 * day), now.Add(-91 * day), now.Add(-89 * day), now} {
		db.Exec(`INSERT INTO audit_log(created_at, action) VALUES (?, 'replay')`, at.UnixMilli())
	}
	clock := &fakeClock{t: now, step: time.Second}
	a := &AuditRetention{DB: db, Table: "audit_log", TimeColumn: "created_at", MaxAge: 90 * day,
		Limits: Limits{BatchSize: 1, Budget: time.Second, Clock: clock.Now}}
	sum, err := a.Run(ctx, now)
	if err != nil || sum["expired"] != int64(1) || sum["more"] != true {
		t.Fatalf("first run (budget of one batch) %v %v", sum, err)
	}
	sum, err = a.Run(ctx, now)
	if err != nil || sum["expired"] != int64(1) || sum["more"] != true {
		t.Fatalf("second run %v %v", sum, err)
	}
	sum, err = a.Run(ctx, now)
	if err != nil || sum["expired"] != int64(0) || sum["more"] != false {
		t.Fatalf("third run %v %v", sum, err)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM audit_log`); n != 2 {
		t.Fatalf("left %d, want 2", n)
	}
	if n := counter(t, db, CounterAuditExpired); n != 2 {
		t.Fatalf("counter %d", n)
	}
}

func TestAuditRetentionRejectsBadNamesAndReportsMissingTable(t *testing.T) {
	db := sqlitetest.New(t)
	bad := &AuditRetention{DB: db, Table: "admin_audit; DROP TABLE counters", TimeColumn: "created_at", MaxAge: day}
	if _, err := bad.Run(ctx, time.Now()); err == nil {
		t.Fatal("an invalid table name was accepted")
	}
	missing := &AuditRetention{DB: db, Table: "no_such_table", TimeColumn: "created_at", MaxAge: day}
	if _, err := missing.Run(ctx, time.Now()); err == nil {
		t.Fatal("a missing table must fail the run, not be skipped silently")
	}
}
