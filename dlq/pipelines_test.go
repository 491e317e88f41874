package dlq

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq/dlqtest"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

// withPipelines returns the pipelines of dlqtest.PipelinesJSON.
func withPipelines(t testing.TB) Pipelines { return dlqtest.Pipelines(t) }

func pipelineCapture(t *testing.T, ps Pipelines) (*Capture, *bytes.Buffer) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	c.Stores = Single(Store{DB: db, Pipelines: ps})
	c.SourceQueue = map[string]string{dlqName: "beer-enrichment", "orders-dlq": "orders", "odd-dlq": "odd", "other-dlq": "other"}
	return c, &logs
}

// Each pipeline's rows get their key and labels through its pointers: a
// string key as is, a number key as its JSON text, anything else poison
// (stored, never dropped); labels in beer_name then brewer. A queue of no
// pipeline is read as the beer pipeline, as before pipelines.
func TestCaptureReadsEachPipelinesPointers(t *testing.T) {
	c, logs := pipelineCapture(t, withPipelines(t))
	db := c.DB
	msgs := []struct {
		dlq, id, body              string
		key, label1, label2, class string
	}{
		{"orders-dlq", "o-str", `{"order":{"id":"o-1","customer":"ACME"},"lines":[1]}`, "o-1", "ACME", "", "unknown"},
		{"orders-dlq", "o-num", `{"order":{"id":42.50,"customer":{"n":1}}}`, "42.50", `{"n":1}`, "", "unknown"},
		{"orders-dlq", "o-neg", `{"order":{"id":-3}}`, "-3", "", "", "unknown"},
		{"orders-dlq", "o-none", `{"order":{"customer":"SECRET-PAYLOAD"}}`, UnparseableKey, "SECRET-PAYLOAD", "", "poison"},
		{"orders-dlq", "o-null", `{"order":{"id":null}}`, UnparseableKey, "", "", "poison"},
		{"orders-dlq", "o-obj", `{"order":{"id":{"x":1}}}`, UnparseableKey, "", "", "poison"},
		{"orders-dlq", "o-bool", `{"order":{"id":true}}`, UnparseableKey, "", "", "poison"},
		{"orders-dlq", "o-empty", `{"order":{"id":""}}`, UnparseableKey, "", "", "poison"},
		{"orders-dlq", "o-long", `{"order":{"id":"` + strings.Repeat("x", 201) + `"}}`, UnparseableKey, "", "", "poison"},
		{"orders-dlq", "o-beer", `{"beer_id":"b-1"}`, UnparseableKey, "", "", "poison"},
		{"orders-dlq", "o-text", `not json`, UnparseableKey, "", "", "poison"},
		{"odd-dlq", "odd-1", `{"a/b":{"~":"k~/"}}`, "k~/", "", "", "unknown"},
		{"odd-dlq", "odd-arr", `["x","one","two"]`, UnparseableKey, "two", "one", "poison"},
		{dlqName, "b-1", `{"beer_id":"b-1","beer_name":"N","brewer":"B"}`, "b-1", "N", "B", "unknown"},
		{dlqName, "b-num", `{"beer_id":7}`, UnparseableKey, "", "", "poison"},
		{"other-dlq", "x-1", `{"beer_id":"x-1","brewer":"B"}`, "x-1", "", "B", "unknown"},
	}
	for _, m := range msgs {
		qm := queuetest.New(m.id, m.body)
		if err := c.ConsumeBatch(context.Background(), m.dlq, queuetest.Batch(qm)); err != nil || !qm.Acked {
			t.Fatalf("%s not stored: %v", m.id, err)
		}
		r := readRow(t, db, `message_id = ?`, m.id)
		if r.Key != m.key || r.Label1.String != m.label1 || r.Label2.String != m.label2 || r.Class.String != m.class {
			t.Errorf("%s: key %q labels %q %q class %q, want %q %q %q %q (%s)", m.id, r.Key, r.Label1.String, r.Label2.String,
				r.Class.String, m.key, m.label1, m.label2, m.class, r.Reason.String)
		}
	}
	for id, reason := range map[string]string{
		"o-none": "unparseable: no key /order/id; no attempt record", "o-null": "unparseable: key /order/id is null; no attempt record",
		"o-obj":   "unparseable: key /order/id is not a string or number; no attempt record",
		"o-empty": "unparseable: empty key /order/id; no attempt record",
		"o-long":  "unparseable: key /order/id is longer than 200 bytes; no attempt record",
		"o-text":  "unparseable: body is not JSON: invalid character 'o' in literal null (expecting 'u'); no attempt record",
		"b-num":   "unparseable: beer_id is not a string; no attempt record",
	} {
		if r := readRow(t, db, `message_id = ?`, id); r.Reason.String != reason {
			t.Errorf("%s: reason %q, want %q", id, r.Reason.String, reason)
		}
	}
	if strings.Contains(logs.String(), "SECRET-PAYLOAD") {
		t.Fatal("a payload reached the logs")
	}
}

// Whatever the body and the key and label pointers: parsing never panics, a
// usable key is valid UTF-8 of at most 200 bytes, and the body is stored
// (key or the poison placeholder), never dropped. Seeds are in
// testdata/fuzz/FuzzPipelineBody.
func FuzzPipelineBody(f *testing.F) {
	f.Add(`{"order":{"id":"o-1","customer":"c"}}`, "/order/id", "/order/customer")
	f.Add(`{"a/b":{"~":7}}`, "/a~1b/~0", "/x")
	f.Add(`[0,[1,2]]`, "/1/0", "/0")
	f.Add(`"s"`, "", "")
	f.Add("\xff", "/~1", "/~0")
	db := sqlitetest.New(f)
	s := Store{DB: db}
	n := 0
	f.Fuzz(func(t *testing.T, body, key, label string) {
		raw := `[{"name":"fz","queue":"fz","dlq":"fz-dlq","producer":"FZ","key":` + jsonString(key) +
			`,"labels":[{"name":"l","pointer":` + jsonString(label) + `}],"consumer":"external"}]`
		ps, problems := config.ParsePipelines(raw, 1, 3600e9, 24*3600e9)
		if len(problems) != 0 {
			return // not a pointer: config refuses it
		}
		b := parseBody(body, false, ps[0])
		if b.Problem == "" && (b.Key == "" || len(b.Key) > maxKeyBytes || !utf8.ValidString(b.Key)) {
			t.Fatalf("key %q from %q at %q", b.Key, body, key)
		}
		if b.Label1 != nil && len(*b.Label1) > MaxLabelBytes {
			t.Fatalf("label of %d bytes from %q at %q", len(*b.Label1), body, label)
		}
		n++
		id := "fzp" + string(rune('a'+n%26)) + base64.RawURLEncoding.EncodeToString([]byte{byte(n), byte(n >> 8), byte(n >> 16)})
		f := Failure{MessageID: id, SourceQueue: "fz", Body: body, ContentType: queue.Text, FailedAt: t0, parsed: &b}
		if err := s.Put(context.Background(), []Failure{f}); err != nil {
			t.Fatalf("%q not stored: %v", body, err)
		}
		var stored string
		if err := db.QueryRow(`SELECT row_key FROM dlq_messages WHERE message_id = ?`, id).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: UnparseableKey, false: b.Key}[b.Problem != ""]; stored != want {
			t.Fatalf("stored key %q, want %q", stored, want)
		}
	})
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// A key read through a pipeline's pointer at its edges: numbers starting
// with each digit from 0 to 9 or a minus are their JSON text, and a string
// key of exactly maxKeyBytes is kept, one byte more is a problem.
func TestPipelineBodyKeysAtTheirEdges(t *testing.T) {
	orders := withPipelines(t)[1]
	for _, c := range []struct{ id, key, problem string }{
		{`0`, "0", ""},
		{`9`, "9", ""},
		{`0.5`, "0.5", ""},
		{`99`, "99", ""},
		{`-1`, "-1", ""},
		{`"` + strings.Repeat("k", maxKeyBytes) + `"`, strings.Repeat("k", maxKeyBytes), ""},
		{`"` + strings.Repeat("k", maxKeyBytes+1) + `"`, "", "key /order/id is longer than 200 bytes"},
		{`[1]`, "", "key /order/id is not a string or number"},
	} {
		b := parsePipelineBody([]byte(`{"order":{"id":`+c.id+`}}`), orders)
		if b.Key != c.key || b.Problem != c.problem {
			t.Errorf("id %.20s: key %q problem %q, want %q %q", c.id, b.Key, b.Problem, c.key, c.problem)
		}
	}
}

// An unknown pipeline's name is quoted whole up to 64 bytes, and clipped
// to 64 bytes and an ellipsis beyond.
func TestUnknownPipelineNameIsClippedPast64Bytes(t *testing.T) {
	for _, c := range []struct{ name, quoted string }{
		{strings.Repeat("p", 64), strings.Repeat("p", 64)},
		{strings.Repeat("p", 65), strings.Repeat("p", 64) + "…"},
	} {
		_, err := Filter{Pipeline: c.name}.Normalize(nil)
		wantInput(t, err, "UNKNOWN_PIPELINE")
		if msg := err.(*InputError).Message; !strings.HasSuffix(msg, `got "`+c.quoted+`"`) {
			t.Errorf("%d-byte name: message %q, want it quoted as %q", len(c.name), msg, c.quoted)
		}
	}
}

// A label is bounded like the key (at most MaxLabelBytes bytes): a longer
// string, or a pointer to an object or array, keeps its first bytes (cut on
// a character boundary, "…" at the end) instead of the whole text. The row
// is stored as usual (not poison: a label is shown, not a row's identity),
// in every pipeline, the beer one included.
func TestCaptureBoundsLabels(t *testing.T) {
	c, _ := pipelineCapture(t, withPipelines(t))
	long := strings.Repeat("é", 4_000)
	obj := `{"lines":[` + strings.Repeat(`{"sku":"x","qty":1},`, 500) + `{"sku":"y"}]}`
	msgs := []struct{ dlq, id, body, prefix1, prefix2 string }{
		{"orders-dlq", "l-str", `{"order":{"id":"o-1","customer":"` + long + `"}}`, "éé", ""},
		{"orders-dlq", "l-obj", `{"order":{"id":"o-2","customer":` + obj + `}}`, `{"lines":[{"sku":"x"`, ""},
		{"odd-dlq", "l-arr", `{"a/b":{"~":"k"},"1":[` + strings.Repeat(`"abc",`, 300) + `"z"],"2":"` + long + `"}`, "éé", `["abc",`},
		{dlqName, "l-beer", `{"beer_id":"b-9","beer_name":"` + long + `","brewer":"` + long + `"}`, "éé", "éé"},
	}
	for _, m := range msgs {
		qm := queuetest.New(m.id, m.body)
		if err := c.ConsumeBatch(context.Background(), m.dlq, queuetest.Batch(qm)); err != nil || !qm.Acked {
			t.Fatalf("%s not stored: %v", m.id, err)
		}
		r := readRow(t, c.DB, `message_id = ?`, m.id)
		if r.Class.String == "poison" {
			t.Errorf("%s: a long label made the row poison (%s)", m.id, r.Reason.String)
		}
		for i, l := range []sql.NullString{r.Label1, r.Label2} {
			prefix := []string{m.prefix1, m.prefix2}[i]
			if l.Valid != (prefix != "") {
				t.Errorf("%s: label %d %v, want one starting %q", m.id, i+1, l, prefix)
				continue
			}
			if !l.Valid {
				continue
			}
			if len(l.String) > MaxLabelBytes || !strings.HasPrefix(l.String, prefix) || !strings.HasSuffix(l.String, "…") ||
				!utf8.ValidString(l.String) {
				t.Errorf("%s: label of %d bytes %.40q..., want at most %d, cut with …", m.id, len(l.String), l.String, MaxLabelBytes)
			}
		}
	}
	// A label of exactly MaxLabelBytes is kept whole.
	exact := strings.Repeat("a", MaxLabelBytes)
	qm := queuetest.New("l-exact", `{"order":{"id":"o-3","customer":"`+exact+`"}}`)
	if err := c.ConsumeBatch(context.Background(), "orders-dlq", queuetest.Batch(qm)); err != nil {
		t.Fatal(err)
	}
	if r := readRow(t, c.DB, `message_id = 'l-exact'`); r.Label1.String != exact {
		t.Fatalf("a label of %d bytes was changed to %q", MaxLabelBytes, r.Label1.String)
	}
}
