//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Sequential calls are served by the same Go instance: its id stays and its
// call count grows (syumai's own entry module would start one per call).
func TestOneGoInstanceServesManyCalls(t *testing.T) {
	type health struct {
		Instance struct {
			ID    string `json:"id"`
			Calls int64  `json:"calls"`
		} `json:"instance"`
	}
	var first, last health
	for i := 0; i < 10; i++ {
		r, err := shared.Do(http.MethodGet, "/health", nil, AdminHeaders())
		if err != nil || r.Status != http.StatusOK {
			t.Fatalf("health: %v %v", err, r)
		}
		r.Decode(t, &last)
		if i == 0 {
			first = last
		}
	}
	if first.Instance.ID == "" || last.Instance.ID != first.Instance.ID || last.Instance.Calls < first.Instance.Calls+9 {
		t.Fatalf("instance not reused: first %+v, last %+v", first.Instance, last.Instance)
	}
}

// With one Go instance per isolate (platform/worker/worker.mjs), concurrent
// fetch, queue and cron calls are served by that one instance (every health
// answer names the same instance id) and must each get their own answer and
// effects.
func TestConcurrentCallsOnOneInstance(t *testing.T) {
	const n = 40
	token := fmt.Sprintf("concurrent-%d", time.Now().UnixNano())
	var wg sync.WaitGroup
	ids := make(chan string, 3*n)
	instances := make(chan string, n)
	errs := make(chan error, 3*n)
	for i := 0; i < n; i++ {
		wg.Add(3)
		go func() {
			defer wg.Done()
			r, err := shared.Do(http.MethodGet, "/health", nil, AdminHeaders())
			if err != nil || r.Status != http.StatusOK || r.Header.Get("X-Request-ID") != r.ReqID {
				errs <- fmt.Errorf("health: %v %v", err, r)
				return
			}
			var h struct {
				Instance struct {
					ID string `json:"id"`
				} `json:"instance"`
			}
			if err := json.Unmarshal(r.Data, &h); err != nil || h.Instance.ID == "" {
				errs <- fmt.Errorf("health without an instance id: %v %s", err, r.Raw)
				return
			}
			ids <- r.ReqID
			instances <- h.Instance.ID
		}()
		go func() {
			defer wg.Done()
			r, err := shared.Do(http.MethodGet, "/admin/nothing-here", nil, map[string]string{"X-API-Key": "wrong"})
			if err != nil || r.Status != http.StatusNotFound && r.Status != http.StatusUnauthorized {
				errs <- fmt.Errorf("unknown admin route: %v %v", err, r)
				return
			}
			ids <- r.ReqID
		}()
		go func(i int) {
			defer wg.Done()
			body, _ := json.Marshal(map[string]string{"beer_id": fmt.Sprintf("%s-%d", token, i)})
			r, err := shared.Do(http.MethodPost, "/__dev/send", map[string]any{"queue": "beer-enrichment-dlq",
				"messages": []map[string]string{{"body": string(body)}}}, AdminHeaders())
			if err != nil || r.Status != http.StatusOK {
				errs <- fmt.Errorf("send: %v %v", err, r)
				return
			}
			ids <- r.ReqID
		}(i)
	}
	shared.FireCron(t, "*/5 * * * *", time.Time{})
	wg.Wait()
	close(errs)
	close(ids)
	close(instances)
	for err := range errs {
		t.Error(err)
	}
	served := map[string]int{}
	for id := range instances {
		served[id]++
	}
	if len(served) != 1 {
		t.Errorf("concurrent health calls were served by %d Go instances %v, want one", len(served), served)
	}
	seen := map[string]bool{}
	for id := range ids {
		if id == "" || seen[id] {
			t.Errorf("request id %q missing or repeated", id)
		}
		seen[id] = true
	}
	Eventually(t, 60*time.Second, "all concurrently sent DLQ messages stored", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, token+"-%") == n
	})
}
