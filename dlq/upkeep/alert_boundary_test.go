package upkeep

import (
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// Each threshold is "more than": exactly at it does not fire, one past it does.
func TestAlertThresholdsAtTheirExactBoundary(t *testing.T) {
	now := time.UnixMilli(1_750_000_000_000)
	check := func(t *testing.T, c alerts.Condition) bool {
		t.Helper()
		firing, detail, err := c.Check(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(detail)
		return firing
	}
	t.Run("pending high", func(t *testing.T) {
		db := sqlitetest.New(t)
		c := PendingHigh{DB: db, Threshold: 3}
		insert(t, db, adminRow{Key: "1", FailedAt: 1}, adminRow{Key: "2", FailedAt: 1}, adminRow{Key: "3", FailedAt: 1},
			adminRow{Key: "x", FailedAt: 1, Status: dlq.StatusAcknowledged})
		if check(t, c) {
			t.Fatal("fires at exactly the threshold")
		}
		insert(t, db, adminRow{Key: "4", FailedAt: 1})
		if !check(t, c) {
			t.Fatal("does not fire one past the threshold")
		}
	})
	t.Run("oldest pending", func(t *testing.T) {
		db := sqlitetest.New(t)
		c := OldestPending{DB: db, MaxAge: 24 * time.Hour}
		insert(t, db, adminRow{Key: "1", FailedAt: now.Add(-24 * time.Hour).UnixMilli()})
		if check(t, c) {
			t.Fatal("fires at exactly the age")
		}
		insert(t, db, adminRow{Key: "2", FailedAt: now.Add(-24*time.Hour - time.Millisecond).UnixMilli()})
		if !check(t, c) {
			t.Fatal("does not fire one millisecond past the age")
		}
	})
	t.Run("repeat failures", func(t *testing.T) {
		db := sqlitetest.New(t)
		c := RepeatFailures{DB: db, MaxReplays: 2}
		insert(t, db, adminRow{Key: "1", FailedAt: 1, ReplayCount: 2}, adminRow{Key: "x", FailedAt: 1, ReplayCount: 9, Status: dlq.StatusReplayed})
		if check(t, c) {
			t.Fatal("fires at exactly MaxReplays")
		}
		insert(t, db, adminRow{Key: "2", FailedAt: 1, ReplayCount: 3})
		if !check(t, c) {
			t.Fatal("does not fire one past MaxReplays")
		}
	})
	t.Run("retention behind", func(t *testing.T) {
		db := sqlitetest.New(t)
		c := RetentionBehind{DB: db, After: time.Hour}
		record := func(job string, since int64) {
			t.Helper()
			if _, err := db.Exec(`INSERT INTO job_runs(job, last_run_at, last_duration_ms, last_ok, last_summary)
				VALUES (?, ?, 1, 1, json_object('more', json('true'), 'behind_since', ?, 'expired_left', 100000))
				ON CONFLICT(job) DO UPDATE SET last_summary = excluded.last_summary`, job, now.UnixMilli(), since); err != nil {
				t.Fatal(err)
			}
		}
		record(RetentionJobName, now.Add(-time.Hour).UnixMilli())
		record(AuditRetentionJobName, now.Add(-time.Minute).UnixMilli())
		if check(t, c) {
			t.Fatal("fires at exactly the configured time")
		}
		record(AuditRetentionJobName, now.Add(-time.Hour-time.Millisecond).UnixMilli())
		if !check(t, c) {
			t.Fatal("does not fire one millisecond past the configured time")
		}
	})
	t.Run("cap evicting", func(t *testing.T) {
		db := sqlitetest.New(t)
		c := CapEvicting{DB: db}
		for _, evicted := range []int64{0, 1} {
			if _, err := db.Exec(`INSERT INTO job_runs(job, last_run_at, last_duration_ms, last_ok, last_summary) VALUES (?, 1, 1, 1, json_object('deleted_cap', ?, 'cap_keys', json('[]')))
				ON CONFLICT(job) DO UPDATE SET last_summary = excluded.last_summary`, RetentionJobName, evicted); err != nil {
				t.Fatal(err)
			}
			if got := check(t, c); got != (evicted > 0) {
				t.Fatalf("%d rows evicted: firing %v", evicted, got)
			}
		}
	})
}
