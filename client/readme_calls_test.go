package client

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every JSON body that README.md or a page of docs/ sends to an admin route
// is in client/ts/readme_calls.ts, which `make test-ts-client` type-checks
// against the TypeScript client openapi-typescript generates from the
// document.
func TestReadmeCallsAreTypeChecked(t *testing.T) {
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var readme []byte
	for _, p := range append([]string{"../README.md"}, pages...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		readme = append(append(readme, b...), '\n')
	}
	ts, err := os.ReadFile("ts/readme_calls.ts")
	if err != nil {
		t.Fatal(err)
	}
	// curl ... -X POST "$B/admin/..." [\ newline] -d '{...}'
	re := regexp.MustCompile(`-X POST "?\$B/admin/[^ "]*"?\s*(?:\\\n\s*)?-d '(\{[^']*\})'`)
	found := re.FindAllStringSubmatch(string(readme), -1)
	if len(found) < 15 {
		t.Fatalf("found %d admin POST bodies in README.md and docs/; the pattern no longer matches its examples", len(found))
	}
	for _, m := range found {
		if !strings.Contains(string(ts), m[1]) {
			t.Errorf("body %s of README.md or docs/ is not in client/ts/readme_calls.ts", m[1])
		}
	}
}
