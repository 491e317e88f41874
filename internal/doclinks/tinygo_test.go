package doclinks

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoErrorsAsWithAnInterfaceTarget: no file the worker is built from
// (js/wasm with TinyGo) calls errors.As with a pointer to an interface
// variable. TinyGo's reflect panics there ("reflect: unimplemented:
// AssignableTo with interface"), natively it works, so only workerd
// shows it: an audited action that failed was left unanswered until
// worker.mjs's 120 s limit. Walk the error tree with type assertions
// instead (dlq.describedBy).
func TestNoErrorsAsWithAnInterfaceTarget(t *testing.T) {
	files := map[string]*ast.File{}
	fset := token.NewFileSet()
	ifaces := map[string]bool{"error": true}
	for _, f := range textFiles(t, ".go") {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if _, ok := ts.Type.(*ast.InterfaceType); ok {
					ifaces[ts.Name.Name], ifaces[file.Name.Name+"."+ts.Name.Name] = true, true
				}
			}
			return true
		})
		if inWasmBuild(file) {
			files[f] = file
		}
	}
	calls := 0
	for f, file := range files {
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			vars := declaredTypes(fn.Body)
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || types.ExprString(call.Fun) != "errors.As" || len(call.Args) != 2 {
					return true
				}
				calls++
				addr, ok := call.Args[1].(*ast.UnaryExpr)
				if id, isIdent := addrIdent(addr, ok); isIdent && ifaces[vars[id]] {
					t.Errorf("%s:%d: errors.As with a pointer to %s (an interface) panics in the TinyGo build: walk the error tree with type assertions",
						rel(f), fset.Position(call.Pos()).Line, vars[id])
				}
				return true
			})
		}
	}
	if calls < 5 {
		t.Fatalf("found %d errors.As calls; the walk changed", calls)
	}
}

// inWasmBuild says whether file's build constraint admits js/wasm under TinyGo.
func inWasmBuild(file *ast.File) bool {
	for _, g := range file.Comments {
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				return true
			}
			return expr.Eval(func(tag string) bool { return tag == "js" || tag == "wasm" || tag == "tinygo" })
		}
	}
	return true
}

// declaredTypes maps the variables body declares with var and a type to that type's text.
func declaredTypes(body *ast.BlockStmt) map[string]string {
	out := map[string]string{}
	ast.Inspect(body, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && vs.Type != nil {
			for _, name := range vs.Names {
				out[name.Name] = types.ExprString(vs.Type)
			}
		}
		return true
	})
	return out
}

// addrIdent is the name x of &x.
func addrIdent(addr *ast.UnaryExpr, ok bool) (string, bool) {
	if !ok || addr.Op != token.AND {
		return "", false
	}
	id, ok := addr.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}

// TestNoRegexpCompiledAtInit: no file the worker is built from compiles a
// regexp in a package-level variable. TinyGo's regexp/syntax overflows the
// wasm stack on a bounded repetition such as {0,63}, and at init that
// fails every request of the isolate (500 and "stack overflow" on
// /health); compile lazily, on first use, or write the loop
// (config/names.go, access.validName).
func TestNoRegexpCompiledAtInit(t *testing.T) {
	// The folders of the worker's packages (what main imports for js/wasm).
	list := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", ".")
	list.Dir, list.Env = root, append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	worker := map[string]bool{}
	for _, dir := range strings.Fields(string(out)) {
		worker[dir] = true
	}
	fset := token.NewFileSet()
	vars := 0
	for _, f := range textFiles(t, ".go") {
		dir, err := filepath.Abs(filepath.Dir(f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, "_test.go") || !worker[dir] {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if !inWasmBuild(file) {
			continue
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			vars++
			ast.Inspect(g, func(n ast.Node) bool {
				if _, lazy := n.(*ast.FuncLit); lazy {
					return false // runs when called (sync.OnceValue), not at init
				}
				if call, ok := n.(*ast.CallExpr); ok && strings.HasPrefix(types.ExprString(call.Fun), "regexp.") {
					t.Errorf("%s:%d: %s at package level runs at init in the TinyGo build: compile it on first use",
						rel(f), fset.Position(call.Pos()).Line, types.ExprString(call.Fun))
				}
				return true
			})
		}
	}
	if vars < 20 {
		t.Fatalf("found %d package-level var declarations; the walk changed", vars)
	}
}
