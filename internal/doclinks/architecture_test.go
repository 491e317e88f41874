package doclinks

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// goPackageDirs returns every folder of the repository holding a .go file
// (tests and e2e-tagged files included, so that `go list ./...`'s packages
// and e2e/ are all there), as a path from the module root ending in "/";
// the module root itself is ".".
func goPackageDirs(t *testing.T) []string {
	t.Helper()
	dirs := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (skipDirs[d.Name()] || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".go") {
			dir := rel(filepath.Dir(p))
			if dir != "." {
				dir += "/"
			}
			dirs[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for d := range dirs {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

var (
	layoutRow = regexp.MustCompile("(?m)^\\| *([^|]*?) *\\|")
	codeSpan  = regexp.MustCompile("`([^`]+)`")
)

// layoutPaths returns the paths docs/architecture.md's "Layout" table names
// in its first column, each in backquotes: `dlq/`, `cmd/migrate/`,
// `main.go`.
func layoutPaths(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Layout\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Layout" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var out []string
	for _, row := range layoutRow.FindAllStringSubmatch(section, -1) {
		for _, m := range codeSpan.FindAllStringSubmatch(row[1], -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// TestArchitectureNamesEveryPackage: the first column of the table in
// docs/architecture.md "Layout" names every folder that holds Go code
// (`queue/queuetest/`; the module root's package as `main.go`), and every
// path it names exists.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	named := map[string]bool{}
	paths := layoutPaths(t)
	for _, p := range paths {
		named[p] = true
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			t.Errorf("docs/architecture.md \"Layout\" names %s, which does not exist: remove its row or correct the path", p)
		}
	}
	pkgs := goPackageDirs(t)
	for _, d := range pkgs {
		want := d
		if d == "." {
			want = "main.go"
		}
		if !named[want] {
			t.Errorf("docs/architecture.md \"Layout\" does not name package folder %s: add `%s` to the first column of a row", d, want)
		}
	}
	t.Logf("%d package folders, %d paths named", len(pkgs), len(paths))
	if len(pkgs) < 20 || len(paths) < 20 {
		t.Fatalf("found %d package folders and %d named paths; the walk or the table's form changed", len(pkgs), len(paths))
	}
}
