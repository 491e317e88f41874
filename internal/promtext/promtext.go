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
	e := &Exposition{Samples: map[string]float64{}, Types: map[string]string{}, Help: map[string]string{}}
	done := map[string]bool{} // families whose samples are over
	current := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fail := func(format string, args ...any) error {
			return fmt.Errorf("line %d %q: %s", n, line, fmt.Sprintf(format, args...))
		}
		switch {
		case line == "":
			return nil, fail("empty line")
		case strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE "):
			parts := strings.SplitN(line[7:], " ", 2)
			if len(parts) != 2 || !metricName.MatchString(parts[0]) {
				return nil, fail("bad HELP/TYPE")
			}
			name := parts[0]
			if name != current {
				if done[name] {
					return nil, fail("family %s is not contiguous", name)
				}
				if current != "" {
					done[current] = true
				}
				current = name
			}
			if line[2] == 'H' {
				if _, dup := e.Help[name]; dup {
					return nil, fail("second HELP")
				}
				h, err := unescape(parts[1], false)
				if err != nil {
					return nil, fail("%v", err)
				}
				e.Help[name] = h
			} else {
				if _, dup := e.Types[name]; dup {
					return nil, fail("second TYPE")
				}
				if !types[parts[1]] {
					return nil, fail("unknown type")
				}
				e.Types[name] = parts[1]
			}
		case strings.HasPrefix(line, "#"):
			continue // comment
		default:
			name, labels, value, err := sample(line)
			if err != nil {
				return nil, fail("%v", err)
			}
			if name != current {
				return nil, fail("sample of %s outside its family (current %q)", name, current)
			}
			if _, ok := e.Types[name]; !ok {
				return nil, fail("sample before TYPE")
			}
			k := Key(name, labels...)
			if _, dup := e.Samples[k]; dup {
				return nil, fail("duplicate series")
			}
			e.Samples[k] = value
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("no final newline")
	}
	return e, nil
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
	seen := map[string]bool{}
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, `="`)
			if eq <= 0 || !labelName.MatchString(rest[:eq]) || seen[rest[:eq]] {
				return "", nil, 0, fmt.Errorf("bad or repeated label name")
			}
			ln := rest[:eq]
			seen[ln] = true
			rest = rest[eq+2:]
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
			if !closed {
				return "", nil, 0, fmt.Errorf("unterminated label value")
			}
			v, err := unescape(raw.String(), true)
			if err != nil {
				return "", nil, 0, err
			}
			labels = append(labels, ln, v)
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
			} else if !strings.HasPrefix(rest, "}") {
				return "", nil, 0, fmt.Errorf("expected , or }")
			}
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
