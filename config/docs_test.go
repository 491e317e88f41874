package config

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docs/configuration.md "Configuration" is where each setting is documented,
// once: every var Load reads has its row there with the default and bounds
// Load uses, and the table names no var Load does not read.
func TestConfigurationTable(t *testing.T) {
	raw, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	section := text
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end] // the table is the page's first section
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Z0-9_]+)` \\| (var|secret) \\| ([^|]*) \\|")
	rng := regexp.MustCompile(`\((\d+)[–.]+(\d+)\)`)
	type doc struct {
		kind, def string
		lo, hi    int64
		ranged    bool
	}
	docs := map[string]doc{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		d := doc{kind: m[2]}
		cell := strings.TrimSpace(m[3])
		if strings.HasPrefix(cell, "`") {
			d.def = cell[1 : 1+strings.Index(cell[1:], "`")]
		} else if cell != "—" {
			t.Errorf("%s: default cell %q is neither `value` nor —", m[1], cell)
		}
		if r := rng.FindStringSubmatch(cell); r != nil {
			d.lo, _ = strconv.ParseInt(r[1], 10, 64)
			d.hi, _ = strconv.ParseInt(r[2], 10, 64)
			d.ranged = true
		}
		docs[m[1]] = d
	}
	if len(docs) < 20 {
		t.Fatalf("found %d rows in docs/configuration.md; the table's format changed", len(docs))
	}
	read := map[string]bool{}
	for _, s := range Specs() {
		read[s.Name] = true
		d, ok := docs[s.Name]
		switch {
		case !ok:
			t.Errorf("%s is read by Load but has no row in docs/configuration.md", s.Name)
		case d.kind != "var" || d.def != s.Default:
			t.Errorf("%s: docs/configuration.md says %s with default %q, Load reads a var with default %q", s.Name, d.kind, d.def, s.Default)
		case s.Max != 0 && (!d.ranged || d.lo != s.Min || d.hi != s.Max):
			t.Errorf("%s: docs/configuration.md bounds (%d–%d, given %v), Load's %d–%d", s.Name, d.lo, d.hi, d.ranged, s.Min, s.Max)
		}
	}
	for name, d := range docs {
		if d.kind == "var" && !read[name] {
			t.Errorf("docs/configuration.md documents var %s, which Load does not read", name)
		}
	}
}
