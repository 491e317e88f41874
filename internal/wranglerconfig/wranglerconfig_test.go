package wranglerconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// The repository's top level deploys; the e2e environment, which sets
// DEV_ROUTES, does not; nor does any configuration that sets it.
func TestCheckDeployableRefusesDevRoutes(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckDeployable(""); err != nil {
		t.Fatalf("top level: %v", err)
	}
	if err := cfg.CheckDeployable("e2e"); err == nil || !strings.Contains(err.Error(), "environment e2e sets DEV_ROUTES") {
		t.Fatalf("e2e: %v", err)
	}
	if err := cfg.CheckDeployable("nope"); err == nil {
		t.Fatal("an unknown environment passed")
	}
	path := filepath.Join(t.TempDir(), "wrangler.jsonc")
	for _, c := range []struct {
		src string
		ok  bool
	}{
		{`{"vars": {"DEV_ROUTES": "1"}}`, false},
		{`{"vars": {"DEV_ROUTES": ""}, // any value
		}`, false},
		{`{"vars": {"DEV_ROUTESX": "1"}, "env": {"e2e": {"vars": {"DEV_ROUTES": "1"}}}}`, true},
		{`{}`, true},
	} {
		if err := os.WriteFile(path, []byte(c.src), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.CheckDeployable(""); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.src, err)
		}
	}
}

// A var is read as the worker reads it (platform.Getenv): a string as it
// is, a structured value (PIPELINES as a JSON array) as its compact JSON
// text; null as unset.
func TestVarsOfAnyJSONValueAreText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wrangler.jsonc")
	src := `{
  "vars": {
    "A": "[1, 2]", // a string stays as written
    "B": [ {"name": "x", "labels": [ ]}, 2, ],
    "C": {"q": "BINDING"},
    "D": 30,
    "E": null,
  },
}`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Vars{"A": "[1, 2]", "B": `[{"name":"x","labels":[]},2]`, "C": `{"q":"BINDING"}`, "D": "30", "E": ""}
	if len(cfg.Vars) != len(want) {
		t.Fatalf("vars %q, want %q", cfg.Vars, want)
	}
	for k, v := range want {
		if cfg.Vars[k] != v {
			t.Errorf("var %s = %q, want %q", k, cfg.Vars[k], v)
		}
	}
	if err := os.WriteFile(path, []byte(`{"vars": ["not", "an object"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path); err == nil {
		t.Error("vars that are not an object loaded")
	}
}
