package doclinks

import (
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// issueRef is a comment naming an issue of the project by its number N:
// "issue N", "issues N and M", "Issue #N", "(#N)", "#N". A reference into
// another repository's tracker (owner/repo#N) is not one: the '#' follows a
// name, not a space or '('.
var issueRef = regexp.MustCompile(`(?i)\bissues?\s+#?\d+|(?:^|[\s(])#\d+\b`)

// generatedFile is the line that marks a generated Go file.
var generatedFile = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestCommentsNameNoIssue: no comment of the repository's own Go code
// (third_party and generated files aside) names an issue by its number.
// Why code is as it is belongs in the comment itself; when it changed, and
// under which issue, is in git.
func TestCommentsNameNoIssue(t *testing.T) {
	n := 0
	for _, f := range textFiles(t, ".go") {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if generatedFile.Match(src) {
			continue
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range file.Comments {
			n++
			// The group's text with the comment markers blanked out, so
			// that a reference wrapped over two lines is found and each
			// match's line is the line it starts on.
			start := fset.Position(g.Pos())
			text := string(src[start.Offset:fset.Position(g.End()).Offset])
			text = regexp.MustCompile(`//|/\*|\*/`).ReplaceAllString(text, "  ")
			for _, m := range issueRef.FindAllStringIndex(text, -1) {
				line := start.Line + strings.Count(text[:m[0]], "\n")
				ref := strings.Join(strings.Fields(text[m[0]:m[1]]), " ")
				t.Errorf("%s:%d: a comment names %q: say what the code does and why; the issue is in git's history", rel(f), line, ref)
			}
		}
	}
	if n < 500 {
		t.Fatalf("found %d comment groups; the walk changed", n)
	}
}
