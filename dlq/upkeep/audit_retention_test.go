package upkeep

import (
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
)

func TestAuditRetentionDeletesOldRecords(t *testing.T) {
	db := sqlitetest.New(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	// Records written by the admin API itself, at four ages.
	for _, at := range []time.Time{now.Add(-100 * day), now.Add(-91 * day), now.Add(-89 * day), now} {
		if _, err := (dlq.Audit{DB: db, Clock: func() time.Time { return at }}).Begin(ctx, dlq.AuditStart{Action: "replay"}); err != nil {
			t.Fatal(err)
		}
	}
	clock := &fakeClock{T: now, Step: time.Second}
	a := &AuditRetention{DB: db, MaxAge: 90 * day, Limits: jobs.Limits{ChunkRows: 1, Budget: time.Second, Clock: clock.Now}}
	sum, err := a.Run(ctx, now)
	if err != nil || sum["expired"] != int64(1) || sum["more"] != true || sum["expired_left"] != int64(1) || sum["behind_since"] != now.UnixMilli() {
		t.Fatalf("first run (budget of one batch) %v %v", sum, err)
	}
	if err := (metrics.JobRuns{DB: db}).RecordRun(ctx, a.Name(), now, time.Second, nil, sum); err != nil {
		t.Fatal(err)
	}
	// The budget runs out again after a full batch, but a bounded count
	// finds nothing left: the run finished.
	sum, err = a.Run(ctx, now)
	if err != nil || sum["expired"] != int64(1) || sum["more"] != false || sum["expired_left"] != int64(0) || sum["behind_since"] != nil {
		t.Fatalf("second run %v %v", sum, err)
	}
	sum, err = a.Run(ctx, now)
	if err != nil || sum["expired"] != int64(0) || sum["more"] != false {
		t.Fatalf("third run %v %v", sum, err)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM admin_audit WHERE at >= ?`, now.Add(-90*day).UnixMilli()); n != 2 {
		t.Fatalf("kept %d of the 2 records within the retention", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM admin_audit`); n != 2 {
		t.Fatalf("left %d, want 2", n)
	}
	if n := counter(t, db, CounterAuditExpired); n != 2 {
		t.Fatalf("counter %d", n)
	}
}

func TestAuditRetentionReportsAMissingTable(t *testing.T) {
	db := sqlitetest.New(t)
	if _, err := db.Exec(`DROP TABLE admin_audit`); err != nil {
		t.Fatal(err)
	}
	if _, err := (&AuditRetention{DB: db, MaxAge: day}).Run(ctx, time.Now()); err == nil {
		t.Fatal("a missing table must fail the run, not be skipped silently")
	}
}

// A MaxAge of zero (or less) is refused before anything is deleted: it
// would expire every record at once.
func TestAuditRetentionRefusesAMaxAgeOfZero(t *testing.T) {
	db := sqlitetest.New(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	if _, err := (dlq.Audit{DB: db, Clock: func() time.Time { return now.Add(-time.Hour) }}).Begin(ctx, dlq.AuditStart{Action: "replay"}); err != nil {
		t.Fatal(err)
	}
	for _, age := range []time.Duration{0, -time.Millisecond} {
		a := &AuditRetention{DB: db, MaxAge: age, Limits: jobs.Limits{ChunkRows: 10, Budget: time.Second}}
		if sum, err := a.Run(ctx, now); err == nil || sum != nil {
			t.Fatalf("MaxAge %s: %v %v", age, sum, err)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM admin_audit`); n != 1 {
			t.Fatalf("MaxAge %s: %d records left, want 1", age, n)
		}
	}
}
