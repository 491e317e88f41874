// Package promtext is a strict parser of the Prometheus text exposition
// format (version 0.0.4), used by tests to check /admin/metrics.
package promtext

import (
	"bufio"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	types      = map[string]bool{"counter": true, "gauge": true, "histogram": true, "summary": true, "untyped": true}
)

// Exposition is a parsed page: each series by its canonical key
// (name{a="x",b="y"} with labels sorted; just name without labels), and each
// family's type and help.
type Exposition struct {
	Samples map[string]float64
	Types   map[string]string
	Help    map[string]string
}

// Key builds a canonical series key from a name and label pairs.
func Key(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	var pairs []string
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+"="+strconv.Quote(labels[i+1]))
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// Parse parses text strictly: every sample belongs to a family declared by
// a TYPE line before it, families are contiguous and declared once, series
// are unique, names, escapes and values are valid. Timestamps are rejected
// (redrive does not emit them).
func Parse(text string) (*Exposition, error) {
	p := &parser{
		e:    &Exposition{Samples: map[string]float64{}, Types: map[string]string{}, Help: map[string]string{}},
		done: map[string]bool{},
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fail := func(format string, args ...any) error {
			return fmt.Errorf("line %d %q: %s", n, line, fmt.Sprintf(format, args...))
		}
		var err error
		switch {
		case line == "":
			return nil, fail("empty line")
		case strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE "):
			err = p.declaration(line)
		case strings.HasPrefix(line, "#"):
			continue // comment
		default:
			err = p.sampleLine(line)
		}
		if err != nil {
			return nil, fail("%v", err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("no final newline")
	}
	return p.e, nil
}

// parser is what Parse has read so far: the exposition, the family whose
// lines are being read, and the families whose samples are over.
type parser struct {
	e       *Exposition
	done    map[string]bool
	current string
}

// declaration reads a "# HELP name text" or "# TYPE name type" line: the
// family it names becomes the current one (it must not have ended
// before), and its help or type is recorded once.
func (p *parser) declaration(line string) error {
	e := p.e
	parts := strings.SplitN(line[7:], " ", 2)
	if len(parts) != 2 || !metricName.MatchString(parts[0]) {
		return fmt.Errorf("bad HELP/TYPE")
	}
	name := parts[0]
	if name != p.current {
		if p.done[name] {
			return fmt.Errorf("family %s is not contiguous", name)
		}
		if p.current != "" {
			p.done[p.current] = true
		}
		p.current = name
	}
	if line[2] == 'H' {
		if _, dup := e.Help[name]; dup {
			return fmt.Errorf("second HELP")
		}
		h, err := unescape(parts[1], false)
		if err != nil {
			return err
		}
		e.Help[name] = h
	} else {
		if _, dup := e.Types[name]; dup {
			return fmt.Errorf("second TYPE")
		}
		if !types[parts[1]] {
			return fmt.Errorf("unknown type")
		}
		e.Types[name] = parts[1]
	}
	return nil
}

// sampleLine reads a sample line and records its series, which must be
// new and belong to the current family, already typed.
func (p *parser) sampleLine(line string) error {
	e := p.e
	name, labels, value, err := sample(line)
	if err != nil {
		return err
	}
	if name != p.current {
		return fmt.Errorf("sample of %s outside its family (current %q)", name, p.current)
	}
	if _, ok := e.Types[name]; !ok {
		return fmt.Errorf("sample before TYPE")
	}
	k := Key(name, labels...)
	if _, dup := e.Samples[k]; dup {
		return fmt.Errorf("duplicate series")
	}
	e.Samples[k] = value
	return nil
}

// sample parses name{labels} value.
func sample(line string) (name string, labels []string, value float64, err error) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", nil, 0, fmt.Errorf("no value")
	}
	name, rest := line[:i], line[i:]
	if !metricName.MatchString(name) {
		return "", nil, 0, fmt.Errorf("bad metric name")
	}
	if rest[0] == '{' {
		if labels, rest, err = labelSet(rest[1:]); err != nil {
			return "", nil, 0, err
		}
	}
	if !strings.HasPrefix(rest, " ") || strings.Contains(rest[1:], " ") {
		return "", nil, 0, fmt.Errorf("want exactly one space and a value (no timestamp)")
	}
	value, err = strconv.ParseFloat(rest[1:], 64)
	if err != nil {
		return "", nil, 0, fmt.Errorf("bad value: %v", err)
	}
	return name, labels, value, nil
}

// labelSet parses a sample's labels, rest being the text after its "{":
// name="value" pairs, each name once, separated by commas, up to the
// closing "}". It returns the labels as name, value pairs and the text
// after the "}".
func labelSet(rest string) ([]string, string, error) {
	var labels []string
	seen := map[string]bool{}
	for {
		if strings.HasPrefix(rest, "}") {
			rest = rest[1:]
			break
		}
		eq := strings.Index(rest, `="`)
		if eq <= 0 || !labelName.MatchString(rest[:eq]) || seen[rest[:eq]] {
			return nil, "", fmt.Errorf("bad or repeated label name")
		}
		ln := rest[:eq]
		seen[ln] = true
		raw, next, closed := labelValue(rest[eq+2:])
		if !closed {
			return nil, "", fmt.Errorf("unterminated label value")
		}
		rest = next
		v, err := unescape(raw, true)
		if err != nil {
			return nil, "", err
		}
		labels = append(labels, ln, v)
		if strings.HasPrefix(rest, ",") {
			rest = rest[1:]
		} else if !strings.HasPrefix(rest, "}") {
			return nil, "", fmt.Errorf("expected , or }")
		}
	}
	return labels, rest, nil
}

// labelValue scans a label value, rest being the text after its opening
// quote: it returns the value's raw (still escaped) text, the text after
// its closing quote, and whether there was one (when not, rest unchanged).
func labelValue(rest string) (string, string, bool) {
	var raw strings.Builder
	closed := false
	for j := 0; j < len(rest); j++ {
		if rest[j] == '\\' && j+1 < len(rest) {
			raw.WriteString(rest[j : j+2])
			j++
			continue
		}
		if rest[j] == '"' {
			rest = rest[j+1:]
			closed = true
			break
		}
		raw.WriteByte(rest[j])
	}
	return raw.String(), rest, closed
}

// unescape decodes \\ and \n (and \" in label values); any other escape is an error.
func unescape(s string, label bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\n' || (label && c == '"') {
			return "", fmt.Errorf("unescaped %q", c)
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("dangling backslash")
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case '"':
			if !label {
				return "", fmt.Errorf(`\" outside a label value`)
			}
			b.WriteByte('"')
		default:
			return "", fmt.Errorf("unknown escape \\%c", s[i])
		}
	}
	return b.String(), nil
}
