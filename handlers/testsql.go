package handlers

import (
	"fmt"
	"net/http"

	"github.com/redrive/redrive/metrics"
)

type testSQLRequest struct {
	Statements []struct {
		SQL  string `json:"sql"`
		Args []any  `json:"args"`
	} `json:"statements"`
}

// testSQLResult is one statement's rows and what D1 reported it read and wrote.
type testSQLResult struct {
	Rows []map[string]any `json:"rows"`
	metrics.Usage
}

// testSQL runs statements one after the other and answers, for each, its
// rows and D1's rows read and written (the meter's count for it): the e2e
// budget tests and the bench measure single statements in workerd with it.
// It exists only when API.DevSender is set (the e2e environment).
func (a *API) testSQL(w http.ResponseWriter, r *http.Request) error {
	var req testSQLRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if len(req.Statements) == 0 {
		return badRequest("INVALID_REQUEST", "statements must be a non-empty array")
	}
	out := make([]testSQLResult, len(req.Statements))
	for i, s := range req.Statements {
		ctx, op := metrics.Start(r.Context(), "e2e sql")
		rows, err := a.DB.QueryContext(ctx, s.SQL, s.Args...)
		if err != nil {
			return badRequest("INVALID_REQUEST", fmt.Sprintf("statement %d: %v", i+1, err))
		}
		cols, _ := rows.Columns()
		out[i].Rows = []map[string]any{}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for j := range vals {
				ptrs[j] = &vals[j]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			row := map[string]any{}
			for j, c := range cols {
				if b, ok := vals[j].([]byte); ok {
					vals[j] = string(b)
				}
				row[c] = vals[j]
			}
			out[i].Rows = append(out[i].Rows, row)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return badRequest("INVALID_REQUEST", fmt.Sprintf("statement %d: %v", i+1, err))
		}
		out[i].Usage = op.Usage()
	}
	respond(w, r, http.StatusOK, out)
	return nil
}
