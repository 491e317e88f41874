package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/redrive/redrive/client"
)

// filterFlags are the list's filters, shared by ls, replay, ack, tasks
// create, export and tail.
type filterFlags struct {
	status, pipeline, beerID, sourceQueue, q, signature, version, versionNot string
	after, before                                                            string
}

func (f *filterFlags) register(fs *pflag.FlagSet, status string) {
	if status != "" {
		fs.StringVar(&f.status, "status", "", status)
	}
	fs.StringVar(&f.pipeline, "pipeline", "", "rows of this configured pipeline (redrive pipelines)")
	fs.StringVar(&f.beerID, "beer-id", "", "rows of this beer id")
	fs.StringVar(&f.sourceQueue, "source-queue", "", "rows that failed on this queue")
	fs.StringVar(&f.q, "q", "", "substring of beer name, brewer or failure reason")
	fs.StringVar(&f.signature, "signature", "", "rows of this failure group (redrive groups)")
	fs.StringVar(&f.version, "version", "", "rows whose latest failure happened on this worker version")
	fs.StringVar(&f.versionNot, "version-not", "", "rows whose latest failure happened on any other version")
	fs.StringVar(&f.after, "failed-after", "", "failed at or after: epoch ms, RFC 3339, or a duration ago (24h)")
	fs.StringVar(&f.before, "failed-before", "", "failed before: epoch ms, RFC 3339, or a duration ago")
}

func (f *filterFlags) empty() bool {
	return f.status == "" && f.pipeline == "" && f.beerID == "" && f.sourceQueue == "" && f.q == "" && f.signature == "" &&
		f.version == "" && f.versionNot == "" && f.after == "" && f.before == ""
}

// when parses a time flag: epoch ms, RFC 3339, or a duration before now.
func when(name, s string) (*int, error) {
	if s == "" {
		return nil, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		v := int(n)
		return &v, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		v := int(t.UnixMilli())
		return &v, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		v := int(time.Now().Add(-d).UnixMilli())
		return &v, nil
	}
	return nil, usagef("--%s %q: want epoch ms, RFC 3339 or a duration such as 24h", name, s)
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// filter is the bulk actions' filter object.
func (f *filterFlags) filter() (*client.Filter, error) {
	after, err := when("failed-after", f.after)
	if err != nil {
		return nil, err
	}
	before, err := when("failed-before", f.before)
	if err != nil {
		return nil, err
	}
	out := &client.Filter{Pipeline: opt(f.pipeline), BeerId: opt(f.beerID), SourceQueue: opt(f.sourceQueue), Q: opt(f.q), Signature: opt(f.signature),
		Version: opt(f.version), VersionNot: opt(f.versionNot), FailedAfter: after, FailedBefore: before}
	if f.status != "" {
		s := client.FilterStatus(f.status)
		out.Status = &s
	}
	return out, nil
}

// listParams are GET /admin/dlq's parameters.
func (f *filterFlags) listParams() (*client.ListDLQParams, error) {
	flt, err := f.filter()
	if err != nil {
		return nil, err
	}
	p := &client.ListDLQParams{Pipeline: flt.Pipeline, BeerId: flt.BeerId, SourceQueue: flt.SourceQueue, Q: flt.Q, Signature: flt.Signature,
		Version: flt.Version, VersionNot: flt.VersionNot, FailedAfter: flt.FailedAfter, FailedBefore: flt.FailedBefore}
	if f.status != "" {
		s := client.ListDLQParamsStatus(f.status)
		p.Status = &s
	}
	return p, nil
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(anySlice(header)...)
	}
	return t
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func (t *table) row(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = cell(c)
	}
	fmt.Fprintln(t.tw, strings.Join(parts, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// cell renders a value on one line: nil as -, text clipped and without
// control characters (row text is attacker-controlled).
func cell(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "-"
	case *string:
		if x == nil {
			return "-"
		}
		s = *x
	case *int:
		if x == nil {
			return "-"
		}
		s = strconv.Itoa(*x)
	case *int64:
		if x == nil {
			return "-"
		}
		s = strconv.FormatInt(*x, 10)
	case string:
		s = x
	default:
		s = fmt.Sprint(x)
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	if s == "" {
		return "-"
	}
	return s
}

// ms renders epoch milliseconds as UTC time.
type ms int64

func (m ms) String() string {
	if m == 0 {
		return "-"
	}
	return time.UnixMilli(int64(m)).UTC().Format("2006-01-02 15:04:05")
}

func msp(p *int64) any {
	if p == nil {
		return nil
	}
	return ms(*p)
}
