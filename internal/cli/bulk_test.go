package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// bulkServer answers dry runs with 3 matched rows and each other POST
// with the next of answers (the last one repeats), recording the bodies.
func bulkServer(t *testing.T, answers ...string) (*httptest.Server, *[]string) {
	var bodies []string
	acts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		bodies = append(bodies, r.URL.Path+" "+b.String())
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(b.String(), `"dry_run":true`) {
			fmt.Fprint(w, `{"success":true,"requestId":"x","data":{"dry_run":true,"matched_count":3,"not_replayable_count":0,"sample":[],"by_failure_reason":[]}}`)
			return
		}
		a := answers[min(acts, len(answers)-1)]
		acts++
		if strings.HasPrefix(a, "500 ") {
			w.WriteHeader(http.StatusInternalServerError)
			a = strings.TrimPrefix(a, "500 ")
		}
		fmt.Fprint(w, a)
	}))
	t.Cleanup(srv.Close)
	return srv, &bodies
}

func bulkEnv(srv *httptest.Server) map[string]string {
	return map[string]string{"REDRIVE_URL": srv.URL, "REDRIVE_API_KEY": "k", "REDRIVE_ADMIN_SECRET": "s"}
}

const (
	replayPage1 = `{"success":true,"requestId":"x","data":{"requested_count":2,"claimed_count":2,"replayed_count":2,"failed_count":0,"queued_to":"q1","delay_seconds":0,"replayed_ids":[1,2],"failed_ids":[],"skipped_count":0,"skipped":[],"next_cursor":"r1","has_more":true}}`
	replayPage2 = `{"success":true,"requestId":"x","data":{"requested_count":1,"claimed_count":1,"replayed_count":1,"failed_count":0,"queued_to":"q2,q1","delay_seconds":0,"replayed_ids":[3],"failed_ids":[],"skipped_count":0,"skipped":[],"next_cursor":null,"has_more":false}}`
	serverError = `500 {"success":false,"requestId":"r","error":{"code":"INTERNAL_ERROR","message":"internal error"}}`
)

// A replay by filter: the dry run, then page after page at the previous
// answer's cursor, the answers added up.
func TestReplayByFilterFollowsItsCursorAndAddsUp(t *testing.T) {
	srv, bodies := bulkServer(t, replayPage1, replayPage2)
	code, out, errOut := run(t, bulkEnv(srv), "", "replay", "--q", "x", "--yes", "--json")
	if code != ExitOK || len(*bodies) != 3 {
		t.Fatalf("exit %d, requests %v, stderr %s", code, *bodies, errOut)
	}
	if !strings.Contains((*bodies)[0], `"dry_run":true`) || strings.Contains((*bodies)[1], "cursor") || !strings.Contains((*bodies)[2], `"cursor":"r1"`) {
		t.Fatalf("requests %v", *bodies)
	}
	var total replayTotals
	if err := json.Unmarshal([]byte(out), &total); err != nil {
		t.Fatal(err)
	}
	if total.ReplayedCount != 3 || fmt.Sprint(total.ReplayedIDs) != "[1 2 3]" || total.QueuedTo != "q1,q2" || total.HasMore == nil || *total.HasMore {
		t.Fatalf("totals %s", out)
	}
	if !strings.Contains(errOut, "\rreplayed 2 rows (page 1)\rreplayed 3 rows\n") {
		t.Fatalf("progress %q", errOut)
	}
}

// A request that fails after rows were replayed ends the replay as
// partial, showing what was done; a first request that fails is a failure.
func TestReplayCutShortIsPartial(t *testing.T) {
	srv, bodies := bulkServer(t, replayPage1, serverError)
	code, out, errOut := run(t, bulkEnv(srv), "", "replay", "--q", "x", "--yes")
	if code != ExitPartial || len(*bodies) != 3 || !strings.Contains(errOut, "after 2 rows replayed") || !strings.Contains(out, "REPLAYED") {
		t.Fatalf("exit %d, requests %d, stdout %q, stderr %q", code, len(*bodies), out, errOut)
	}
	srv, bodies = bulkServer(t, serverError)
	code, out, _ = run(t, bulkEnv(srv), "", "replay", "--q", "x", "--yes")
	if code != ExitFailure || len(*bodies) != 2 || out != "" {
		t.Fatalf("a first request that fails: exit %d, requests %d, stdout %q", code, len(*bodies), out)
	}
}

// --dry-run sends the dry run only and prints it on stdout.
func TestDryRunSendsNothingElse(t *testing.T) {
	for _, verb := range []string{"replay", "ack"} {
		srv, bodies := bulkServer(t, serverError)
		code, out, _ := run(t, bulkEnv(srv), "", verb, "--q", "x", "--dry-run")
		if code != ExitOK || len(*bodies) != 1 || !strings.HasPrefix(out, "3 pending rows would be ") {
			t.Fatalf("%s: exit %d, requests %v, stdout %q", verb, code, *bodies, out)
		}
	}
}

// An ack by filter asks again while rows are acknowledged and more match.
func TestAckByFilterStopsWhenNothingMoreIsAcknowledged(t *testing.T) {
	ack := `{"success":true,"requestId":"x","data":{"acknowledged_count":%d,"requested_count":%d,"acknowledged_ids":[],"has_more":true}}`
	srv, bodies := bulkServer(t, fmt.Sprintf(ack, 2, 2), fmt.Sprintf(ack, 1, 1), fmt.Sprintf(ack, 0, 0))
	code, out, errOut := run(t, bulkEnv(srv), "", "ack", "--q", "x", "--yes", "--json")
	if code != ExitOK || len(*bodies) != 4 {
		t.Fatalf("exit %d, requests %v, stderr %s", code, *bodies, errOut)
	}
	var total ackTotals
	if err := json.Unmarshal([]byte(out), &total); err != nil || total.AcknowledgedCount != 3 || total.HasMore == nil || *total.HasMore {
		t.Fatalf("totals %s (%v)", out, err)
	}
}

// ls --all --json prints the pages joined: every message, the first page's
// counts, the last page's cursor, in the page's field order.
func TestListAllJoinsThePages(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cursor") == "c1" {
			fmt.Fprint(w, `{"success":true,"requestId":"x","data":{"messages":[{"id":2}],"total_count":9,"total_count_exact":true,"limit":1,"next_cursor":null,"has_more":false}}`)
			return
		}
		fmt.Fprint(w, `{"success":true,"requestId":"x","data":{"messages":[{"id":1}],"total_count":2,"total_count_exact":false,"limit":1,"next_cursor":"c1","has_more":true}}`)
	}))
	defer srv.Close()
	code, out, errOut := run(t, bulkEnv(srv), "", "ls", "--all", "--json")
	want := `{"messages":[{"id":1},{"id":2}],"total_count":2,"total_count_exact":false,"limit":1,"next_cursor":null,"has_more":false}`
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(out)); code != ExitOK || err != nil || compact.String() != want {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
}
