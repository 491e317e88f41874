//go:build js && wasm

package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall/js"

	"github.com/redrive/redrive/sqlbatch"
)

// D1Batch is sqlbatch.Runner over a D1 binding's batch(): the statements
// travel in one round trip and run as one SQL transaction (see OpenD1).
type D1Batch struct {
	db      js.Value
	observe func(context.Context, D1Meta)
}

// Batch runs stmts with DB.batch([...]) and returns each D1Result's rows.
func (b D1Batch) Batch(ctx context.Context, stmts ...sqlbatch.Stmt) ([]json.RawMessage, error) {
	if b.db.IsUndefined() {
		return nil, errors.New("batch: no D1 binding")
	}
	prepared := make([]any, len(stmts))
	for i, s := range stmts {
		if err := sqlbatch.CheckArgs(s.Args); err != nil {
			return nil, fmt.Errorf("batch statement %d: %w", i+1, err)
		}
		args := make([]any, len(s.Args))
		for j, a := range s.Args {
			if p, ok := a.([]byte); ok {
				u := uint8Array.New(len(p))
				js.CopyBytesToJS(u, p)
				a = u
			}
			args[j] = a
		}
		prepared[i] = b.db.Call("prepare", s.SQL).Call("bind", args...)
	}
	results, err := await(ctx, b.db.Call("batch", prepared))
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	out := make([]json.RawMessage, results.Length())
	for i := range out {
		observe(ctx, b.observe, results.Index(i))
		rows := results.Index(i).Get("results")
		if rows.IsUndefined() || rows.IsNull() {
			out[i] = json.RawMessage("[]")
			continue
		}
		out[i] = json.RawMessage(jsonObj.Call("stringify", rows).String())
	}
	return out, nil
}
