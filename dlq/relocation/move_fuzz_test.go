package relocation

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/redrive/redrive/dlq"
)

// ParseImport takes any body without panicking: it returns rows that pass
// their checks, or an *InputError and no rows. Rows it accepts, written
// again as NDJSON, parse to the same rows.
func FuzzParseImport(f *testing.F) {
	f.Add([]byte(`{"id":7,"message_id":"m","beer_id":"k","beer_name":null,"brewer":"infra","failed_at":1,"failure_count":3,"failure_reason":"r","source_queue":"tickets","status":"pending","replay_count":0,"replayed_at":null,"acknowledged_at":null,"failure_class":"transient","first_failed_at":1,"replaying_at":null,"acknowledged_note":null,"updated_at":1,"content_type":"json","pipeline":"tickets","key":"k","labels":{"team":"infra"},"raw_message":"{}","raw_encoding":"text","last_message_id":"m","body_hash":null,"body_edited":null,"history":[{"at":1}],"history_dropped":0,"version":"v1","signature":{"signature":"00ab","class":"transient","text":"r","source_queue":"tickets","first_seen":1,"announced_at":null,"versions":["v1"],"sample_ids":[7]}}` + "\n"))
	f.Add([]byte("{}\n{}"))
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"id":1,"id":2}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rows, err := ParseImport(body, 20)
		if err != nil {
			var in *dlq.InputError
			if !errors.As(err, &in) || rows != nil {
				t.Fatalf("error %v (%T) with %d rows", err, err, len(rows))
			}
			return
		}
		var again bytes.Buffer
		for _, r := range rows {
			if err := r.check(); err != nil {
				t.Fatalf("accepted a row that fails its check: %v", err)
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			again.Write(b)
			again.WriteByte('\n')
		}
		back, err := ParseImport(again.Bytes(), 20)
		if err != nil || !reflect.DeepEqual(normalizeRows(back), normalizeRows(rows)) {
			t.Fatalf("rows written again parse differently: %v", err)
		}
	})
}

// normalizeRows compacts the raw JSON fields (marshalling compacts them).
func normalizeRows(rows []ImportRow) []ImportRow {
	out := append([]ImportRow(nil), rows...)
	for i := range out {
		var b bytes.Buffer
		json.Compact(&b, out[i].History)
		out[i].History = b.Bytes()
		if s := out[i].Signature; s != nil {
			c := *s
			var v, ids bytes.Buffer
			json.Compact(&v, c.Versions)
			json.Compact(&ids, c.SampleIDs)
			c.Versions, c.SampleIDs = v.Bytes(), ids.Bytes()
			out[i].Signature = &c
		}
	}
	return out
}
