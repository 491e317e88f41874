package doclinks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the module root, two levels above this package.
const root = "../.."

// skipDirs are not the repository's own text: dependencies, build output,
// local state and vendored code.
var skipDirs = map[string]bool{
	".git": true, "node_modules": true, "build": true, ".wrangler": true,
	"third_party": true, "bench-results": true, ".tinygo": true, "screenshots": true,
}

// pages are the documents whose links are checked and whose headings may be
// cited: README.md and docs/*.md.
func pages(t *testing.T) []string {
	t.Helper()
	ps, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, ps...)
}

var (
	fence    = regexp.MustCompile("(?m)^```")
	heading  = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	htmlLink = regexp.MustCompile(`<(https?://[^>]+)>`)
)

// outsideFences drops fenced code blocks, whose `#` lines are shell comments.
func outsideFences(text string) string {
	parts := fence.Split(text, -1)
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 0 {
			b.WriteString(p)
		}
	}
	return b.String()
}

// headings returns a page's headings as written and as GitHub anchors.
func headings(t *testing.T, path string) (names, anchors map[string]bool) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	names, anchors = map[string]bool{}, map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(outsideFences(string(raw)), -1) {
		names[m[1]] = true
		anchors[anchor(m[1])] = true
	}
	return names, anchors
}

// anchor is GitHub's id for a heading: lower case, punctuation dropped
// (letters, digits, '-', '_' and spaces kept), spaces as '-'.
func anchor(h string) string {
	h = strings.ReplaceAll(h, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func rel(p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

// TestLinksResolve: every relative link of README.md and docs/*.md names a file or folder that exists, and its #anchor, if any, a
// heading of that page.
func TestLinksResolve(t *testing.T) {
	n := 0
	for _, page := range pages(t) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(outsideFences(string(raw)), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			n++
			target, frag, _ := strings.Cut(link, "#")
			path := page
			if target != "" {
				unescaped, err := url.PathUnescape(target)
				if err != nil {
					t.Errorf("%s: link %s: %v", rel(page), link, err)
					continue
				}
				path = filepath.Join(filepath.Dir(page), filepath.FromSlash(unescaped))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %s: no such file", rel(page), link)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s: link %s: an anchor into a file that is not a page", rel(page), link)
				continue
			}
			if _, anchors := headings(t, path); !anchors[frag] {
				t.Errorf("%s: link %s: %s has no heading with anchor #%s", rel(page), link, rel(path), frag)
			}
		}
	}
	t.Logf("%d relative links checked", n)
	if n < 40 {
		t.Fatalf("found %d relative links; the pages or the pattern changed", n)
	}
}

// citation is the one form code and comments cite a section in: the page
// and the heading in double quotes, `docs/costs.md "What it costs"` or
// `README "Deploying"`. Comment markers and line
// breaks may fall between the page and the section (a wrapped comment), and
// the quotes may be JSON-escaped (handlers/openapi.json).
var citation = regexp.MustCompile(`\b(README(?:\.md)?|docs/[a-z0-9-]+\.md)((?:\s|//|--|#|\*)+)\\?"([^"\\]{1,80})\\?"`)

// a loose mention of a page followed by a quoted name, for the form check
var looseREADME = regexp.MustCompile(`\bREADME(?:'s|,) +"?[A-Z][a-z]+`)

// textFiles walks the repository's own files with the given extensions.
func textFiles(t *testing.T, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		for _, e := range exts {
			if strings.HasSuffix(d.Name(), e) {
				out = append(out, p)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var citingFiles = []string{".go", ".sql", ".json", ".jsonc", ".js", ".jsx", ".mjs", ".ts", ".sh", "Makefile", ".example", ".yml", ".yaml", "run"}

// TestCitedSectionsExist: every citation (see citation) in code, tests,
// schema, scripts and config names a page that exists and a heading of it,
// written exactly; and no README section is cited in another form
// ("README's X", `README, "X"`).
func TestCitedSectionsExist(t *testing.T) {
	n := 0
	for _, f := range textFiles(t, citingFiles...) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for _, m := range citation.FindAllStringSubmatch(text, -1) {
			n++
			page := m[1]
			if strings.HasPrefix(page, "README") {
				page = "README.md"
			}
			path := filepath.Join(root, filepath.FromSlash(page))
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s cites %s %q: no such page", rel(f), m[1], m[3])
				continue
			}
			section := strings.Join(strings.Fields(regexp.MustCompile(`//|--|#|\*`).ReplaceAllString(m[3], " ")), " ")
			if names, _ := headings(t, path); !names[section] {
				t.Errorf("%s cites %s %q: no such heading in %s", rel(f), m[1], section, page)
			}
		}
		for _, m := range looseREADME.FindAllString(text, -1) {
			t.Errorf("%s: %q: cite a section as its page and its heading in double quotes", rel(f), m)
		}
	}
	t.Logf("%d citations checked", n)
	if n < 20 {
		t.Fatalf("found %d citations; the pattern no longer matches the code's", n)
	}
}

// repoPath is a path in a Go comment that starts at one of the repository's
// top-level folders (checked against the tree) and names a file by its
// extension, or a migration by its number.
var repoPath = regexp.MustCompile("(?:^|[\\s(`'\"])((?:[a-z0-9_.-]+/)+(?:[A-Za-z0-9_.-]+\\.(?:go|sql|md|mjs|jsonc|json|jsx|js|ts|sh|txt|png|css|html)|\\d{4}[a-z0-9_]*))")

// generated (build output) and local paths a comment may name that are not
// in the tree.
var notInTree = []string{"build/", "bench-results/", ".wrangler/", "node_modules/", "e2e/screenshots/"}

// TestGoCommentPathsExist: every repository path a Go comment names
// (`dlq/store.go`, `e2e/d1rows_test.go`, `migrations/0012`) exists.
func TestGoCommentPathsExist(t *testing.T) {
	top := map[string]bool{}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !skipDirs[e.Name()] {
			top[e.Name()] = true
		}
	}
	n := 0
	for _, f := range textFiles(t, ".go") {
		for _, c := range comments(t, f) {
			for _, m := range repoPath.FindAllStringSubmatch(c, -1) {
				p := strings.TrimRight(m[1], ".")
				first, _, _ := strings.Cut(p, "/")
				if !top[first] || hasAnyPrefix(p, notInTree) {
					continue
				}
				n++
				if !exists(p) {
					t.Errorf("%s: a comment names %s, which does not exist", rel(f), p)
				}
			}
		}
	}
	t.Logf("%d paths checked", n)
	if n < 30 {
		t.Fatalf("found %d paths in Go comments; the pattern changed", n)
	}
}

func hasAnyPrefix(s string, ps []string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// exists reports whether p is a file of the tree, or a migration number
// (migrations/0012) that begins a file's name.
func exists(p string) bool {
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err == nil {
		return true
	}
	dir, base := filepath.Split(filepath.FromSlash(p))
	matches, _ := filepath.Glob(filepath.Join(root, dir, base+"*"))
	return len(matches) > 0 && regexp.MustCompile(`^\d{4}`).MatchString(base)
}

// comments returns the text of a Go file's comments.
func comments(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range f.Comments {
		out = append(out, g.Text())
	}
	return out
}

// qualified is a project package's exported name in a comment: dlq.Store,
// jobs.WhileMore, consume.Router.
var qualified = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)`)

// TestGoCommentNamesExist: every `pkg.Name` a Go comment cites, where pkg
// is one of the repository's packages, is a top-level name of that package.
func TestGoCommentNamesExist(t *testing.T) {
	// The repository's packages by name, each with its top-level names.
	decls := map[string]map[string]bool{}
	for _, f := range textFiles(t, ".go") {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		pkg := strings.TrimSuffix(file.Name.Name, "_test")
		if pkg == "main" || strings.HasPrefix(rel(f), "e2e/") {
			continue
		}
		if decls[pkg] == nil {
			decls[pkg] = map[string]bool{}
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					decls[pkg][d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						decls[pkg][s.Name.Name] = true
					case *ast.ValueSpec:
						for _, id := range s.Names {
							decls[pkg][id.Name] = true
						}
					}
				}
			}
		}
	}
	n := 0
	for _, f := range textFiles(t, ".go") {
		if strings.HasSuffix(f, ".gen.go") {
			continue
		}
		for _, c := range comments(t, f) {
			for _, m := range qualified.FindAllStringSubmatch(c, -1) {
				names, ok := decls[m[1]]
				if !ok {
					continue
				}
				n++
				if !names[m[2]] {
					t.Errorf("%s: a comment names %s.%s, which package %s does not declare", rel(f), m[1], m[2], m[1])
				}
			}
		}
	}
	t.Logf("%d package-qualified names checked", n)
	if n < 50 {
		t.Fatalf("found %d package-qualified names in Go comments; the pattern changed", n)
	}
}
