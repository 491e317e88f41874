// Package worker holds redrive's entry module, worker.mjs (copied into build/
// by the Makefile). It keeps one Go instance per isolate; these tests guard
// the assumptions that makes safe.
package worker

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// worker.mjs swaps the shared context's env and ctx on every call. env is
// the same for every call of an isolate, but ctx is per call: code reading
// ctx (waitUntil, passThroughOnException) could see a concurrent call's ctx.
// So no Go code may use it.
func TestNoGoCodeUsesTheExecutionContext(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	banned := regexp.MustCompile(`\b(WaitUntil|PassThroughOnException|MustGetExecutionContext)\b`)
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "build" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		if loc := banned.FindIndex(src); loc != nil {
			t.Errorf("%s uses %s: per-call ctx is not safe with one Go instance per isolate", path, src[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("checked only %d Go files", checked)
	}
}

// The entry module must dispatch all three kinds of call to one instance
// and restart it when the Go program exits.
func TestEntryModuleDispatchesEveryCall(t *testing.T) {
	src, err := os.ReadFile("worker.mjs")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"binding.serveHTTP(id, head, body)", "const refused = gated(binding, req, head);", "runScheduler(event)", "binding.consumeBatch(batch.queue", "running = undefined",
		// Every fetch call waits for Go through answers.mjs, whose limit
		// answers 503 (answers.test.mjs).
		"await answers.call((id) =>", "if (res === null) return answers.timeoutResponse(req);", "binding: { ...answers.binding }"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("worker.mjs lacks %q", want)
		}
	}
}
