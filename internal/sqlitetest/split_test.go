package sqlitetest

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// wranglerSplit splits a migration into statements as wrangler 4.86's D1
// splitter does (src/d1/splitter.ts): quotes and comments are skipped, and
// a ';' ends a statement unless a compound statement is open, which opens
// at whitespace + BEGIN or CASE + whitespace and closes at whitespace + END
// + whitespace or ';'. So a CASE must have whitespace before it ("CAST(
// CASE") and its END whitespace after it ("END ,"), or the migration fails
// in `wrangler d1 migrations apply` with "incomplete input" although SQLite
// itself runs the file.
func wranglerSplit(sql string) []string {
	start := regexp.MustCompile(`(?i)\s(BEGIN|CASE)\s$`)
	end := regexp.MustCompile(`\sEND[;\s]$`)
	var out []string
	var str strings.Builder
	open := 0
	rs := []rune(sql)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		if open > 0 && end.MatchString(str.String()+string(c)) {
			open--
		}
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(rs) && rs[j] != c {
				j++
			}
			str.WriteString(string(rs[i:min(j+1, len(rs))]))
			i = j
		case c == '-' && i+1 < len(rs) && rs[i+1] == '-':
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
			str.WriteByte('\n')
		case c == ';' && open == 0:
			out = append(out, str.String())
			str.Reset()
		default:
			str.WriteRune(c)
		}
		if start.MatchString(str.String()) {
			open++
		}
	}
	out = append(out, str.String())
	var stmts []string
	for _, s := range out {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts
}

// Every migration applies statement by statement as wrangler splits it.
func TestMigrationsSplitAsWranglerDoes(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "migrations", "*.sql"))
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no migrations")
	}
	db := Open(t)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range wranglerSplit(string(b)) {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("%s: a statement as wrangler splits it fails: %v\n%.300s", filepath.Base(f), err, s)
			}
		}
	}
	// The splitter's rule on a trigger whose CASE follows "(".
	bad := "CREATE TRIGGER t AFTER INSERT ON x BEGIN\n SELECT CAST(CASE 1 WHEN 1 THEN 2 END AS INTEGER);\n SELECT 1;\nEND;"
	if n := len(wranglerSplit(bad)); n == 1 {
		t.Errorf("the split of a trigger with CAST(CASE is one statement; wrangler's is not")
	}
}

// As in D1, a statement gets exactly as many arguments as its parameters.
func TestArgumentsMatchParameters(t *testing.T) {
	db := New(t)
	if _, err := db.Exec(`SELECT ?1`, 1, 2); err == nil || !strings.Contains(err.Error(), "Wrong number of parameter bindings") {
		t.Fatalf("one extra argument: %v", err)
	}
	if _, err := db.Query(`SELECT ?, ?`, 1); err == nil {
		t.Fatal("one argument short passed")
	}
	if rows, err := db.Query(`SELECT ?2, ?1`, 1, 2); err != nil {
		t.Fatal(err)
	} else {
		rows.Close()
	}
}
