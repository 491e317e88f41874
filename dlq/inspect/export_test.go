package inspect

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
)

// Every lead character a spreadsheet runs as a formula (=, +, -, @, tab,
// CR) gets a leading ', and so does a leading ' itself; each has its own
// case, so dropping any one from NeutralizeCell fails here. Through the
// CSV writer too: the cell read back is the neutralised one, and removing
// one leading ' gives the value.
func TestNeutralizeCellEveryLeadCharacter(t *testing.T) {
	for _, c := range []struct{ name, in string }{
		{"equals", "=HYPERLINK(\"http://x\")"},
		{"plus", "+1+2"},
		{"minus", "-2+3"},
		{"at", "@SUM(A1)"},
		{"tab", "\t=1"},
		{"carriage return", "\r=1"},
		{"quote", "'=1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := NeutralizeCell(c.in); got != "'"+c.in {
				t.Errorf("NeutralizeCell(%q) = %q, want %q", c.in, got, "'"+c.in)
			}
			var buf bytes.Buffer
			w, err := NewCSVExport(&buf, false)
			if err != nil {
				t.Fatal(err)
			}
			row, _ := json.Marshal(dlq.Message{ID: 1, MessageID: "m", BeerID: c.in, BeerName: &c.in, Status: dlq.StatusPending})
			if err := w.Write([]json.RawMessage{row}); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if c.in[0] == '\r' {
				// (encoding/csv's reader drops a CR inside a quoted field: the bytes say it.)
				if want := `,"'` + c.in + `","'` + c.in + `",`; !strings.Contains(buf.String(), want) {
					t.Errorf("csv %q does not hold %q", buf.String(), want)
				}
				return
			}
			recs, err := csv.NewReader(&buf).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 2 || recs[1][2] != "'"+c.in || recs[1][3] != "'"+c.in || strings.TrimPrefix(recs[1][3], "'") != c.in {
				t.Errorf("csv cells %q, want %q", recs[1:], "'"+c.in)
			}
		})
	}
	// Cells that are not formulas stay as they are (a lead character
	// elsewhere in the cell, a leading space, the empty cell).
	for _, v := range []string{"", "a=b", "Beer", " =1", "1-2", "\n=1"} {
		if got := NeutralizeCell(v); got != v {
			t.Errorf("NeutralizeCell(%q) = %q, want it unchanged", v, got)
		}
	}
}

// A cell's own CR and LF are written as they are (inside quotes); only
// records end with CRLF. (csv.Writer's UseCRLF would drop the CR.)
func TestCSVExportKeepsLineBreaksInCells(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewCSVExport(&buf, false)
	if err != nil {
		t.Fatal(err)
	}
	reason := "line one\rline two\nline three\r\nend"
	row, _ := json.Marshal(dlq.Message{ID: 7, MessageID: "m7", BeerID: "b", FailureReason: &reason, Status: dlq.StatusPending})
	if err := w.Write([]json.RawMessage{row, row}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	line := "7,m7,b,,,0,," + `"` + reason + `"` + ",,pending,0,,,,0,,,0,,,,{}\r\n"
	want := strings.Join(ExportColumns, ",") + "\r\n" + line + line
	if buf.String() != want {
		t.Fatalf("csv\n%q\nwant\n%q", buf.String(), want)
	}
}
