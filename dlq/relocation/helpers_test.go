package relocation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/dlqtest"
	"github.com/redrive/redrive/dlq/upkeep"
	"github.com/redrive/redrive/internal/sqlitetest"
)

var (
	ctx     = context.Background()
	discard = slog.New(slog.NewTextHandler(io.Discard, nil))
	day     = 24 * time.Hour

	count        = dlqtest.Count
	counter      = dlqtest.Counter
	keyed        = dlqtest.Keyed
	tallyRows    = dlqtest.TallyRows
	wantTally    = dlqtest.WantTally
	activityRows = dlqtest.ActivityRows
	wantActivity = dlqtest.WantActivity
	checkCounts  = dlqtest.CheckCounts
	runRecorded  = dlqtest.RunRecorded
	flakyDB      = dlqtest.FlakyDB
)

type taskClock = dlqtest.TaskClock

const dlqName = "beer-enrichment-dlq"

func beer(id string) string {
	return fmt.Sprintf(`{"beer_id":%q,"beer_name":"Beer %s","brewer":"Brewer"}`, id, id)
}

func newRetention(t *testing.T) *upkeep.Retention {
	return &upkeep.Retention{DB: sqlitetest.New(t), Log: discard, MaxAge: 30 * day, MaxRowsPerKey: 1000, AttemptMaxAge: 7 * day}
}

// wantInput fails unless err is an *dlq.InputError with code.
func wantInput(t *testing.T, err error, code string) {
	t.Helper()
	var in *dlq.InputError
	if !errors.As(err, &in) || in.Code != code {
		t.Fatalf("err = %v, want input error %s", err, code)
	}
}
