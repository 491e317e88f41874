package dlq

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// mergeTake stops where a stream that has more rows ran out, and advance
// keeps the spot of a stream that gave no row.
func TestMergeTakeStopsAtAnUnreadRow(t *testing.T) {
	desc := func(a, b int) bool { return a > b }
	streams := []Stream[int]{{Rows: []int{9, 5}, More: true}, {Rows: []int{8, 7, 6, 1}}, {}}
	got, taken := MergeTake(streams, 10, desc)
	if fmt.Sprint(got, taken) != "[9 8 7 6 5] [2 3 0]" {
		t.Fatalf("took %v %v", got, taken)
	}
	spots := []Spot{{I: 20}, {I: 30}, {I: 40}}
	Advance(spots, streams, taken, func(v int) Spot { return Spot{I: int64(v)} })
	if fmt.Sprint(spots) != "[{0 5  false} {0 6  false} {0 40  true}]" {
		t.Fatalf("spots %v", spots)
	}
}

// FuzzMergedCursor: decodeSpots never panics, accepts only cursors naming a
// spot per database with valid keys, and what it accepts encodes back to a
// cursor it accepts with the same spots. The input is a cursor's JSON
// payload, signed (signed true) or used as the cursor itself.
func FuzzMergedCursor(f *testing.F) {
	f.Add(`{"k":"dlq*","f":"fp@00000000","t":0,"i":1,"p":[{"t":5,"i":9},{"d":true},{}]}`, true)
	f.Add(`{"k":"groups*","f":"fp@00000000","t":0,"i":1,"p":[{"i":3,"s":"0123456789abcdef"},{},{"i":-1}]}`, true)
	f.Add(`{"k":"dlq*","f":"fp@00000000","t":0,"i":1,"p":[{"t":5,"i":9}]}`, true)
	f.Add(`eyJrIjoiZGxxKiJ9.AAAA`, false)
	d := Databases{All: []Database{{Name: "DB"}, {Name: "A"}, {Name: "B"}}}
	fp := "fp"
	c := NewCursors("secret")
	f.Fuzz(func(t *testing.T, in string, signed bool) {
		// The filter the fuzzer writes is bound to d's names by the test.
		in = strings.Replace(in, "fp@00000000", MergedFilter(fp, d), 1)
		cursor := in
		if signed {
			enc := base64.RawURLEncoding
			cursor = enc.EncodeToString([]byte(in)) + "." + enc.EncodeToString(c.mac([]byte(in)))
		}
		for _, kind := range []string{CursorList, CursorGroups, CursorAudit} {
			p, err := c.DecodeSpots(cursor, kind, fp, d)
			if err != nil {
				var ie *InputError
				if !errors.As(err, &ie) || ie.Code != "INVALID_CURSOR" {
					t.Fatalf("%q: %v", cursor, err)
				}
				continue
			}
			if cursor != "" && len(p.Spots) != len(d.All) {
				t.Fatalf("%q: %d spots", cursor, len(p.Spots))
			}
			if again := c.EncodeSpots(p, kind, fp, d); again != nil {
				q, err := c.DecodeSpots(*again, kind, fp, d)
				if err != nil || fmt.Sprint(q.Spots) != fmt.Sprint(p.Spots) {
					t.Fatalf("%q: re-encoded %v, %v", cursor, q.Spots, err)
				}
			}
		}
	})
}
