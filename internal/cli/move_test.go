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

// import sends the file's lines in order, whole, at most 500 a request;
// release follows next_after until it is null and adds up the calls.
func TestImportAndReleaseCommands(t *testing.T) {
	var imports []string
	var afters []any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		switch r.URL.Path {
		case "/admin/dlq/import":
			if r.Header.Get("Content-Type") != "application/x-ndjson" {
				t.Errorf("import content type %q", r.Header.Get("Content-Type"))
			}
			imports = append(imports, b.String())
			n := strings.Count(b.String(), "\n")
			fmt.Fprintf(w, `{"success":true,"requestId":"x","data":{"database":"TICKETS_DB","lines":%d,"imported":%d,"skipped":0}}`, n, n)
		case "/admin/dlq/release":
			var req map[string]any
			json.Unmarshal(b.Bytes(), &req)
			afters = append(afters, req["after"])
			next := "5000"
			if len(afters) == 2 {
				next = "null"
			}
			fmt.Fprintf(w, `{"success":true,"requestId":"x","data":{"pipeline":"tickets","database":"DB","into":"TICKETS_DB","scanned":3,"released":3,"not_imported":0,"changed":0,"next_after":%s,"remaining":0}}`, next)
		default:
			t.Errorf("unexpected %s", r.URL.Path)
		}
	}))
	defer srv.Close()
	env := map[string]string{"REDRIVE_URL": srv.URL, "REDRIVE_API_KEY": "k", "REDRIVE_ADMIN_SECRET": "s"}
	var lines strings.Builder
	for i := range 1001 {
		fmt.Fprintf(&lines, "{\"id\":%d}\n", i+1)
	}
	code, out, errOut := run(t, env, lines.String(), "import", "-")
	if code != 0 || len(imports) != 3 || strings.Join(imports, "") != lines.String() || !strings.Contains(out, "1001 lines: 1001 imported into TICKETS_DB") {
		t.Fatalf("import: exit %d, %d requests, out %q err %q", code, len(imports), out, errOut)
	}
	code, out, errOut = run(t, env, "", "release", "tickets", "DB")
	if code != 0 || len(afters) != 2 || afters[0] != 0.0 || afters[1] != 5000.0 || !strings.Contains(out, "6 rows released from DB") {
		t.Fatalf("release: exit %d, afters %v, out %q err %q", code, afters, out, errOut)
	}
}
