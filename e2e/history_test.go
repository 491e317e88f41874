//go:build e2e

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/enrichment"
)

// groupsOf reads every page of GET /admin/dlq/groups with query q.
func groupsOf(t *testing.T, w *Worker, q string) []inspect.Group {
	t.Helper()
	var out []inspect.Group
	cursor := ""
	for {
		path := "/admin/dlq/groups?limit=2&" + q
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := w.Admin(t, http.MethodGet, path, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
		}
		var p inspect.GroupsPage
		r.Decode(t, &p)
		out = append(out, p.Groups...)
		if !p.HasMore {
			return out
		}
		cursor = *p.NextCursor
	}
}

func detailOf(t *testing.T, w *Worker, id int64) inspect.MessageDetail {
	t.Helper()
	r := w.Admin(t, http.MethodGet, fmt.Sprintf("/admin/dlq/%d", id), nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /admin/dlq/%d: %d %s", id, r.Status, r.Raw)
	}
	var d inspect.MessageDetail
	r.Decode(t, &d)
	return d
}

// Failure history in workerd: a message failing 4 times then dead-lettered has 4
// history entries with their classes; replayed and failing twice more, 6
// on the same row; rows carry the version they failed on and the version
// filters select them; 1,000 failures with 3 causes (ids and numbers
// differing inside the messages) make exactly 3 groups with the right
// counts; acknowledging one group by signature moves exactly that group;
// dlq_new_failure_signature fires once per signature.
func TestFailureHistoryGroupsAndVersions(t *testing.T) {
	hook := startFakeWebhook(t)
	w := startWorker(t, map[string]string{"ALERT_WEBHOOK_URL": hook.URL + "/hook"})

	// The live version: what rows failing now are stamped with.
	var stats struct {
		CurrentVersion inspect.CurrentVersion `json:"current_version"`
	}
	w.Admin(t, http.MethodGet, "/admin/dlq/stats", nil).Decode(t, &stats)
	live := stats.CurrentVersion.Stamp
	if live == "" || stats.CurrentVersion.ID == "" || stats.CurrentVersion.Build == "" {
		t.Fatalf("current_version %+v: wrangler dev gives a version id", stats.CurrentVersion)
	}

	// 4 failures (500), then the DLQ.
	token := uniq("hist")
	w.Provider.On(token, Behavior{Status: 500, Body: `{"error":{"message":"upstream 10.0.0.7 busy"}}`})
	b := enrichment.Beer{BeerID: "id-" + token, BeerName: token, Brewer: "History Brewing"}
	enrich(t, w, b)
	var id int64
	Eventually(t, 2*time.Minute, "the failing beer is dead-lettered", func() bool {
		id = w.Int(t, `SELECT COALESCE(MAX(id), 0) FROM dlq_messages WHERE row_key = ?`, b.BeerID)
		return id > 0
	})
	d := detailOf(t, w, id)
	if len(d.History) != 4 || d.HistoryDropped != 0 || d.Signature == nil || d.Version == nil || *d.Version != live {
		t.Fatalf("detail after 4 failures: history %+v, signature %+v, version %v", d.History, d.Signature, d.Version)
	}
	for i, e := range d.History {
		if e.Class != "transient" || e.Attempt != i+1 || e.Status == nil || *e.Status != 500 || e.DurationMS == nil ||
			e.Version != live || e.MessageID != d.Message.MessageID || !strings.Contains(e.Error, "status 500") {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	firstSig := d.Signature.Signature

	// Replayed; the replayed message fails once more (500), then for good (400).
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/replay", map[string]any{"ids": []int64{id}}); r.Status != http.StatusOK {
		t.Fatalf("replay: %d %s", r.Status, r.Raw)
	}
	if err := pollFast(time.Minute, func() bool { return len(w.Provider.Calls(token)) >= 5 }); err != nil {
		t.Fatal("the replayed message was not tried:", err)
	}
	w.Provider.On(token, Behavior{Status: 400, Body: `{"error":{"message":"model \"fake\" rejects beer 1234"}}`})
	Eventually(t, time.Minute, "the replayed message fails again onto its row", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND status = 'pending' AND replay_count = 1`, id) == 1
	})
	d = detailOf(t, w, id)
	if len(d.History) != 6 || d.History[4].Class != "transient" || d.History[5].Class != "permanent" ||
		d.History[5].Status == nil || *d.History[5].Status != 400 || d.History[4].MessageID == d.History[0].MessageID ||
		d.History[4].Attempt != 1 || d.History[5].Attempt != 2 {
		t.Fatalf("history after the repeat failure: %+v", d.History)
	}
	if d.Signature == nil || d.Signature.Class != "permanent" || !d.Signature.ReplayWillFail || d.Signature.Signature == firstSig {
		t.Errorf("signature after the repeat failure: %+v", d.Signature)
	}
	if len(d.Replays) != 1 || d.Replays[0].KeyFingerprint == "" || d.Replays[0].Outcome != "ok" {
		t.Errorf("replays %+v", d.Replays)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, b.BeerID); n != 1 {
		t.Errorf("%d rows for the beer, want 1", n)
	}

	// 1,000 poison messages, 3 causes, straight onto the DLQ.
	causes := map[string]int64{}
	for s := 0; s < 10; s++ {
		var msgs []map[string]any
		for i := 0; i < 100; i++ {
			n := s*100 + i
			switch n % 3 {
			case 0: // binary bodies of many lengths
				msgs = append(msgs, map[string]any{"body": base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 1+n%50))), "content_type": "bytes"})
				causes["binary"]++
			case 1: // text that is not JSON, starting with different letters (none a JSON literal's)
				msgs = append(msgs, map[string]any{"body": fmt.Sprintf("%c-%d oops", 'A'+n%20, n)})
				causes["text"]++
			default: // JSON whose beer_id is a number
				msgs = append(msgs, map[string]any{"body": fmt.Sprintf(`{"beer_id":%d,"beer_name":"Poison %d"}`, n, n), "content_type": "json"})
				causes["number"]++
			}
		}
		if r := w.Admin(t, http.MethodPost, "/__dev/send", map[string]any{"queue": "beer-enrichment-dlq", "messages": msgs}); r.Status != http.StatusOK {
			t.Fatalf("send: %d %s", r.Status, r.Raw)
		}
	}
	Eventually(t, 3*time.Minute, "1,000 poison rows captured", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE failure_class = 'poison'`) == 1000
	})
	groups := groupsOf(t, w, "class=poison")
	if len(groups) != 3 {
		t.Fatalf("%d poison groups: %+v", len(groups), groups)
	}
	byText := map[string]inspect.Group{}
	for _, g := range groups {
		byText[g.Text] = g
		if rows := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE signature = ? AND status = 'pending'`, g.Signature); rows != g.Counts.Pending {
			t.Errorf("group %q counts %d pending, the rows %d", g.Text, g.Counts.Pending, rows)
		}
		if !g.ReplayWillFail || len(g.SampleIDs) == 0 || len(g.Versions) != 1 || g.Versions[0] != live {
			t.Errorf("group %+v", g)
		}
	}
	binary := byText["unparseable: binary body (<n> base64 characters)"]
	for text, want := range map[string]int64{
		"unparseable: binary body (<n> base64 characters)":                                    causes["binary"],
		"unparseable: body is not JSON: invalid character <q> looking for beginning of value": causes["text"],
		"unparseable: beer_id is not a string":                                                causes["number"],
	} {
		if got := byText[text].Counts; got != (inspect.GroupCounts{Pending: want}) {
			t.Errorf("group %q: %+v, want %d pending (groups %+v)", text, got, want, groups)
		}
	}

	// The signature filter lists the group; a bulk acknowledge by signature moves exactly it.
	var page struct {
		TotalCount int64 `json:"total_count"`
	}
	w.Admin(t, http.MethodGet, "/admin/dlq?signature="+binary.Signature, nil).Decode(t, &page)
	if page.TotalCount != causes["binary"] {
		t.Errorf("list by signature: total_count %d, want %d", page.TotalCount, causes["binary"])
	}
	r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"filter": map[string]any{"signature": binary.Signature}, "note": "binary test data"})
	var ack resolve.AcknowledgeResult
	r.Decode(t, &ack)
	if r.Status != http.StatusOK || ack.AcknowledgedCount != causes["binary"] {
		t.Fatalf("acknowledge by signature: %d %s", r.Status, r.Raw)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged' AND signature IS NOT ?`, binary.Signature); n != 0 {
		t.Errorf("%d rows of other groups acknowledged", n)
	}
	for _, g := range groupsOf(t, w, "class=poison") {
		want := byText[g.Text].Counts
		if g.Signature == binary.Signature {
			want = inspect.GroupCounts{Acknowledged: causes["binary"]}
		}
		if g.Counts != want {
			t.Errorf("after acknowledge, group %q: %+v, want %+v", g.Text, g.Counts, want)
		}
	}

	// Versions: every row failed on the live version.
	var listed struct {
		TotalCount int64 `json:"total_count"`
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE version IS NOT ?`, live); n != 0 {
		t.Errorf("%d rows not stamped with the live version", n)
	}
	number := byText["unparseable: beer_id is not a string"]
	w.Admin(t, http.MethodGet, "/admin/dlq?version="+url.QueryEscape(live)+"&signature="+number.Signature, nil).Decode(t, &listed)
	if listed.TotalCount != causes["number"] {
		t.Errorf("version and signature filters list %d rows, want %d", listed.TotalCount, causes["number"])
	}
	w.Admin(t, http.MethodGet, "/admin/dlq?version=another-version&status=all", nil).Decode(t, &listed)
	if listed.TotalCount != 0 {
		t.Errorf("another version lists %d rows", listed.TotalCount)
	}
	w.Exec(t, fmt.Sprintf(`UPDATE dlq_messages SET version = 'an-older-version' WHERE id = %d`, id))
	w.Admin(t, http.MethodGet, "/admin/dlq?status=all&version_not="+url.QueryEscape(live), nil).Decode(t, &listed)
	if listed.TotalCount != 1 {
		t.Errorf("version_not of the live version lists %d rows, want the 1 of an older version", listed.TotalCount)
	}
	var preview dlq.Preview
	w.Admin(t, http.MethodPost, "/admin/dlq/replay", map[string]any{"filter": map[string]any{"version_not": live}, "dry_run": true}).Decode(t, &preview)
	if preview.MatchedCount != 1 {
		t.Errorf("dry run of a replay of older versions matches %d rows, want 1", preview.MatchedCount)
	}

	// The announcement (group.opened): once per group, never lost. With the
	// webhook down, a run records every new group's event and tries the
	// webhook once (not once per event: the channel is down for that run);
	// later runs deliver each group once, after the backoff.
	sigs := w.Int(t, `SELECT COUNT(*) FROM dlq_signatures`)
	now := time.Now()
	news := func(delivered bool) []string {
		hook.mu.Lock()
		defer hook.mu.Unlock()
		var out []string
		for _, c := range hook.got {
			if strings.HasPrefix(c.Text, "[redrive] NEW dlq_new_failure_signature: ") && (c.Status < 300) == delivered {
				out = append(out, c.Text)
			}
		}
		return out
	}
	failedCalls := func() (n int) {
		hook.mu.Lock()
		defer hook.mu.Unlock()
		for _, c := range hook.got {
			if c.Status >= 300 {
				n++
			}
		}
		return n
	}
	hook.setStatus(http.StatusInternalServerError)
	if err := w.FireCronErr("*/5 * * * *", now); err != nil {
		t.Logf("alerts run with the webhook down: %v", err)
	}
	if got := failedCalls(); got != 1 {
		t.Errorf("the failing webhook got %d calls in one run, want 1", got)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM alert_events WHERE type = 'group.opened'`); n != sigs {
		t.Errorf("%d group.opened events recorded with the webhook down, want %d", n, sigs)
	}
	hook.setStatus(http.StatusOK)
	w.FireCron(t, "*/5 * * * *", now.Add(5*time.Minute))
	w.FireCron(t, "*/5 * * * *", now.Add(10*time.Minute))
	if got := news(true); int64(len(got)) != sigs || sigs != 5 {
		t.Errorf("%d announcements for %d signatures (want 5: transient, permanent, 3 poison): %q", len(got), sigs, got)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_signatures WHERE announced_at IS NULL`); n != 0 {
		t.Errorf("%d signatures not marked announced", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM alert_deliveries WHERE state <> 'sent'`); n != 0 {
		t.Errorf("%d deliveries not sent after the webhook came back", n)
	}
	newsText := news(true)
	if !strings.Contains(strings.Join(newsText, "\n"), "binary body (&lt;n&gt; base64 characters)") {
		t.Errorf("announcements lack a group's text: %q", newsText)
	}

	all := groupsOf(t, w, "")
	// Newest first: the same groups, each once, in first_seen order.
	byFirstSeen := groupsOf(t, w, "sort=first_seen")
	seenSig := map[string]bool{}
	for i, g := range byFirstSeen {
		if seenSig[g.Signature] || (i > 0 && g.FirstSeen > byFirstSeen[i-1].FirstSeen) {
			t.Errorf("sort=first_seen: group %d %s out of order or twice", i, g.Signature)
		}
		seenSig[g.Signature] = true
	}
	if len(byFirstSeen) != len(all) || int64(len(all)) != sigs {
		t.Errorf("sort=first_seen lists %d groups, sort=pending %d, of %d", len(byFirstSeen), len(all), sigs)
	}
	js, _ := json.MarshalIndent(all, "", "  ")
	t.Logf("groups:\n%s", js)
}
