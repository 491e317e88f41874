//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// An anonymous post is refused before its body is read, in workerd: run
// through Miniflare without wrangler dev's proxy (which hands a request on
// only as its body arrives), a 1 MB post of which only the first KiB is
// ever sent gets its 401 at once, while one with the admin pair is left
// waiting for its body (e2e/testdata/unread_body.mjs). The entry module
// used to read every body before Go saw the request: the anonymous post
// was never answered.
func TestAnonymousBodyIsRefusedUnreadInWorkerd(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(root, "wrangler.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	date := regexp.MustCompile(`"compatibility_date":\s*"([0-9-]+)"`).FindSubmatch(cfg)
	if date == nil {
		t.Fatal("no compatibility_date in wrangler.jsonc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", filepath.Join(root, "e2e", "testdata", "unread_body.mjs"), root, string(date[1])).CombinedOutput()
	var res struct {
		OK        bool `json:"ok"`
		Anonymous *struct {
			MS int64 `json:"ms"`
		} `json:"anonymous"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || jerr != nil || !res.OK {
		t.Fatalf("unread_body.mjs: %v %v\n%s", err, jerr, out)
	}
	t.Logf("a stalled anonymous 1 MB post refused in %d ms; one with the admin pair waits for its body", res.Anonymous.MS)
}

// Through wrangler dev: an anonymous 1 MB post is answered as the same
// request without a body (which is not gated) is: the same envelope but
// the request id, the same headers; the worker serves on.
func TestAnonymousBodyIsRefusedAsWithout(t *testing.T) {
	// A whole anonymous 1 MB post, and the same request without a body
	// (which is not gated): the same answer but the request id.
	withBody, err := shared.Do(http.MethodPost, "/admin/dlq/import", bytes.Repeat([]byte("x"), 1<<20), map[string]string{"Content-Type": "application/x-ndjson"})
	if err != nil {
		t.Fatal(err)
	}
	without, err := shared.Do(http.MethodPost, "/admin/dlq/import", nil, map[string]string{"Content-Type": "application/x-ndjson"})
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`"requestId":"[0-9a-f-]{36}"`)
	if withBody.Status != 401 || without.Status != 401 || !bytes.Equal(id.ReplaceAll(withBody.Raw, nil), id.ReplaceAll(without.Raw, nil)) ||
		withBody.Header.Get("X-Request-ID") != withBody.ReqID {
		t.Fatalf("refused unread: %d %s; served: %d %s", withBody.Status, withBody.Raw, without.Status, without.Raw)
	}
	for _, h := range []string{"Content-Type", "X-Content-Type-Options", "Cache-Control"} {
		if withBody.Header.Get(h) != without.Header.Get(h) || withBody.Header.Get(h) == "" {
			t.Errorf("%s: refused unread %q, served %q", h, withBody.Header.Get(h), without.Header.Get(h))
		}
	}
	// The worker serves on.
	if r := shared.Admin(t, http.MethodGet, "/health", nil); r.Status != http.StatusOK {
		t.Fatalf("health after: %d %s", r.Status, r.Raw)
	}
}

// In workerd: /health tells an anonymous caller its status alone; answers
// carry nosniff and no-store; a DEV_ROUTES route addressed to another host
// is no route.
func TestHardenedAnswers(t *testing.T) {
	r, err := shared.Do(http.MethodGet, "/health", nil, nil)
	if err != nil || r.Status != http.StatusOK || string(r.Data) != `{"status":"ok"}` {
		t.Fatalf("anonymous health: %v %v", err, r)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("health headers: %v", r.Header)
	}
	full := shared.Admin(t, http.MethodGet, "/health", nil)
	var h struct {
		Version string `json:"version"`
	}
	full.Decode(t, &h)
	if h.Version == "" {
		t.Fatalf("health with credentials: %s", full.Raw)
	}

	u, _ := url.Parse(shared.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	for host, want := range map[string]int{"evil.example:" + port: 404, "localhost:" + port: 400} {
		req, _ := http.NewRequest(http.MethodPost, shared.URL+"/__dev/send", strings.NewReader(`{"queue":"","messages":[]}`))
		req.Host = host
		for k, v := range AdminHeaders() {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("POST /__dev/send to Host %s: %d %s, want %d", host, resp.StatusCode, body, want)
		}
	}
}

// In workerd, import, release and enrich each leave an audit entry in D1
// with their counts, listed by GET /admin/audit.
func TestImportReleaseEnrichAreAudited(t *testing.T) {
	token := fmt.Sprintf("audit-%d", time.Now().UnixNano())
	shared.ExecDirect(t, fmt.Sprintf(`INSERT INTO dlq_messages(message_id, row_key, label_1, failed_at, source_queue, raw_message, content_type, first_failed_at, updated_at)
		VALUES ('%[1]s', '%[1]s', 'x', 1000, 'beer-enrichment', '{"beer_id":"%[1]s"}', 'json', 1000, 1000)`, token))
	line := shared.Admin(t, http.MethodGet, "/admin/dlq/export?format=ndjson&include_raw=true&status=all&beer_id="+token, nil)
	if line.Status != 200 || bytes.Count(line.Raw, []byte("\n")) != 1 {
		t.Fatalf("export: %d %s", line.Status, line.Raw)
	}
	if r, err := shared.Do(http.MethodPost, "/admin/dlq/import", line.Raw, map[string]string{"X-API-Key": TestAPIKey,
		"X-Admin-Secret": TestAdminSecret, "Content-Type": "application/x-ndjson"}); err != nil || r.Status != 200 || r.Contract != nil {
		t.Fatalf("import: %v %v %v", err, r, r.Contract)
	}
	// The line's row is there: the import merges the line into it (one
	// merged, nothing written anew). Every pipeline is on DB here: a
	// release from it is refused, and recorded.
	if r := shared.Admin(t, http.MethodPost, "/admin/dlq/release", map[string]any{"pipeline": "beers", "database": "DB", "after": 7}); r.Status != 400 {
		t.Fatalf("release: %d %s", r.Status, r.Raw)
	}
	if r := shared.Admin(t, http.MethodPost, "/admin/enrich", map[string]any{"beers": []map[string]string{{"beer_id": token, "beer_name": "x"}}}); r.Status != 200 {
		t.Fatalf("enrich: %d %s", r.Status, r.Raw)
	}
	latest := func(action string) map[string]any {
		r := shared.Admin(t, http.MethodGet, "/admin/audit?limit=1&action="+action, nil)
		var page struct {
			Entries []map[string]any `json:"entries"`
		}
		if err := json.Unmarshal(r.Data, &page); err != nil || r.Status != 200 || len(page.Entries) != 1 || r.Contract != nil {
			t.Fatalf("audit %s: %d %v %s", action, r.Status, r.Contract, r.Raw)
		}
		return page.Entries[0]
	}
	imp := latest("import")
	if c, _ := imp["counts"].(map[string]any); imp["outcome"] != "ok" || c["database"] != "DB" || c["lines"] != 1.0 || c["merged"] != 1.0 || c["skipped"] != 0.0 || c["imported"] != 0.0 {
		t.Errorf("import entry: %v", imp)
	}
	rel := latest("release")
	if e, _ := rel["error"].(map[string]any); rel["outcome"] != "error" || e["code"] != "OWN_DATABASE" {
		t.Errorf("release entry: %v", rel)
	}
	enr := latest("enrich")
	if c, _ := enr["counts"].(map[string]any); enr["outcome"] != "ok" || c["received"] != 1.0 || c["queued"] != 1.0 {
		t.Errorf("enrich entry: %v", enr)
	}
}
