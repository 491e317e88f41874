package doclinks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// maxFunctionLines is the longest a function of the repository's own
// production code may be, from its func line to its closing brace: past
// it, a function does several things that want names of their own.
const maxFunctionLines = 60

// TestFunctionsAreShort: no function or method of the repository's own
// production code (tests, third_party and generated files aside) is
// longer than maxFunctionLines. A closure counts toward the function
// around it.
func TestFunctionsAreShort(t *testing.T) {
	n := 0
	for _, f := range textFiles(t, ".go") {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if generatedFile.Match(src) {
			continue
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n++
			if lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; lines > maxFunctionLines {
				t.Errorf("%s:%d: %s is %d lines, over %d: give its steps names of their own",
					rel(f), fset.Position(fn.Pos()).Line, fn.Name.Name, lines, maxFunctionLines)
			}
		}
	}
	if n < 1000 {
		t.Fatalf("found %d functions; the walk changed", n)
	}
}
