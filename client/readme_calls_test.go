package client

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every JSON body the README sends to an admin route is in
// client/ts/readme_calls.ts, which `make test-ts-client` type-checks against
// the TypeScript client openapi-typescript generates from the document.
func TestReadmeCallsAreTypeChecked(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := os.ReadFile("ts/readme_calls.ts")
	if err != nil {
		t.Fatal(err)
	}
	// curl ... -X POST "$B/admin/..." [\ newline] -d '{...}'
	re := regexp.MustCompile(`-X POST "?\$B/admin/[^ "]*"?\s*(?:\\\n\s*)?-d '(\{[^']*\})'`)
	found := re.FindAllStringSubmatch(string(readme), -1)
	if len(found) < 15 {
		t.Fatalf("found %d admin POST bodies in the README; the pattern no longer matches its examples", len(found))
	}
	for _, m := range found {
		if !strings.Contains(string(ts), m[1]) {
			t.Errorf("README body %s is not in client/ts/readme_calls.ts", m[1])
		}
	}
}
