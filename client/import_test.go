package client

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// ImportChunks keeps lines whole and within both limits, in order, and
// refuses a line no request can hold.
func TestImportChunks(t *testing.T) {
	var in bytes.Buffer
	for i := range 7 {
		in.WriteString(strings.Repeat("x", 10*i+1) + "\n")
	}
	in.WriteString("\n") // blank lines are dropped
	chunks, err := ImportChunks(in.Bytes(), 3, 80)
	if err != nil {
		t.Fatal(err)
	}
	var lens []int
	for _, c := range chunks {
		if bytes.Count(c, []byte("\n")) > 3 || len(c) > 80 || c[len(c)-1] != '\n' {
			t.Fatalf("chunk %q", c)
		}
		lens = append(lens, bytes.Count(c, []byte("\n")))
	}
	if got := bytes.Join(chunks, nil); !bytes.Equal(got, bytes.TrimSuffix(in.Bytes(), []byte("\n"))) {
		t.Fatalf("lines lost or reordered: %q", got)
	}
	if want := []int{3, 2, 1, 1}; !slices.Equal(lens, want) {
		t.Fatalf("lines per chunk %v", lens)
	}
	if _, err := ImportChunks([]byte(strings.Repeat("y", 81)+"\n"), 3, 80); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("a line over the byte limit: %v", err)
	}
}
