package handlers

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/dlq/relocation"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/enrichment"
	"github.com/redrive/redrive/metrics"
)

type openAPIDoc struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
	Comps   struct {
		Schemas map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		} `json:"schemas"`
	} `json:"components"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q", doc.OpenAPI)
	}
	return doc
}

// Every route the mux registers (in the production configuration) is in
// the document with its method, and the document lists nothing else.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	api := &API{} // no DevSender: the production route table
	var routes []string
	for _, pattern := range api.Routes() {
		method, path, _ := strings.Cut(pattern, " ")
		routes = append(routes, strings.ToLower(method)+" "+path)
		if _, ok := doc.Paths[path][strings.ToLower(method)]; !ok {
			t.Errorf("route %s is not in handlers/openapi.json", pattern)
		}
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			if !slices.Contains(routes, method+" "+path) {
				t.Errorf("openapi.json documents %s %s, which is not a route", method, path)
			}
		}
	}
}

// jsonNames lists the JSON field names of a struct type (embedded structs flattened).
func jsonNames(t reflect.Type) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, jsonNames(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && f.IsExported() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// alwaysSent lists the JSON field names of a struct type that encoding/json
// always writes: no omitempty or omitzero, not in an embedded pointer.
func alwaysSent(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			if f.Type.Kind() != reflect.Pointer {
				out = append(out, alwaysSent(f.Type)...)
			}
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && f.IsExported() && !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// The response schemas require exactly the fields the handlers always
// send, so that generated types do not make them optional.
func TestOpenAPIRequiresWhatIsAlwaysSent(t *testing.T) {
	doc := loadOpenAPI(t)
	for schema, v := range map[string]any{
		"Message": dlq.Message{}, "Page": inspect.Page{}, "StatsReport": inspect.StatsReport{}, "ReplayResult": resolve.ReplayResult{},
		"AcknowledgeResult": resolve.AcknowledgeResult{}, "Preview": dlq.Preview{}, "AuditEntry": dlq.AuditEntry{},
		"AuditPage": dlq.AuditPage{}, "Health": healthData{}, "EnrichResult": enrichment.EnqueueResult{},
		"BeerState": enrichment.BeerState{}, "MessageDetail": inspect.MessageDetail{}, "RowAuditEntry": inspect.RowAuditEntry{},
		"Series": inspect.Series{}, "Bucket": inspect.Bucket{}, "AlertState": alerts.AlertState{},
		"AlertList": alerts.AlertList{}, "JobStatus": metrics.JobStatus{}, "JobList": metrics.JobList{},
		"QueueList": QueueList{}, "QueueDepth": QueueDepth{},
		"Task": resolve.Task{}, "Group": inspect.Group{}, "GroupsPage": inspect.GroupsPage{}, "HistoryEntry": dlq.HistoryEntry{},
		"ImportResult": relocation.ImportResult{}, "ReleaseResult": relocation.ReleaseResult{}, "ExportSignature": dlq.ImportSignature{},
	} {
		required := slices.Clone(doc.Comps.Schemas[schema].Required)
		slices.Sort(required)
		if want := alwaysSent(reflect.TypeOf(v)); !slices.Equal(required, want) {
			t.Errorf("schema %s: requires %v, the code always sends %v", schema, required, want)
		}
	}
}

// The document's schemas name exactly the fields the handlers send and accept.
func TestOpenAPISchemasMatchTheCode(t *testing.T) {
	doc := loadOpenAPI(t)
	for schema, v := range map[string]any{
		"Message": dlq.Message{}, "Page": inspect.Page{}, "StatsReport": inspect.StatsReport{}, "Filter": dlq.Filter{},
		"ReplayRequest": replayBody{}, "ReplayResult": resolve.ReplayResult{}, "AcknowledgeRequest": acknowledgeBody{},
		"AcknowledgeResult": resolve.AcknowledgeResult{}, "Preview": dlq.Preview{}, "AuditEntry": dlq.AuditEntry{},
		"AuditPage": dlq.AuditPage{}, "Health": healthData{},
		"Beer": enrichment.Beer{}, "EnrichRequest": enrichRequest{}, "EnrichResult": enrichment.EnqueueResult{},
		"BeerState":     enrichment.BeerState{},
		"MessageDetail": inspect.MessageDetail{}, "RowAuditEntry": inspect.RowAuditEntry{}, "Series": inspect.Series{}, "Bucket": inspect.Bucket{},
		"AlertState": alerts.AlertState{}, "AlertList": alerts.AlertList{},
		"Group": inspect.Group{}, "GroupsPage": inspect.GroupsPage{}, "HistoryEntry": dlq.HistoryEntry{},
		"JobStatus": metrics.JobStatus{}, "JobList": metrics.JobList{},
		"QueueList": QueueList{}, "QueueDepth": QueueDepth{},
		"TaskRequest": taskBody{}, "Task": resolve.Task{},
		"ImportResult": relocation.ImportResult{}, "ReleaseRequest": relocation.ReleaseParams{}, "ReleaseResult": relocation.ReleaseResult{},
		"ExportSignature": dlq.ImportSignature{},
	} {
		var documented []string
		for name := range doc.Comps.Schemas[schema].Properties {
			documented = append(documented, name)
		}
		slices.Sort(documented)
		if want := jsonNames(reflect.TypeOf(v)); !slices.Equal(documented, want) {
			t.Errorf("schema %s: documented %v, code has %v", schema, documented, want)
		}
	}
}

func TestOpenAPIIsServed(t *testing.T) {
	h := newAPI(t).Handler()
	rec, _ := do(h, "GET", "/admin/openapi.json", "", adminHeaders)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") || rec.Body.String() != string(openAPIDocument) {
		t.Fatalf("got %d %.100s", rec.Code, rec.Body)
	}
	if rec, _ := do(h, "GET", "/admin/openapi.json", "", nil); rec.Code != 401 {
		t.Fatalf("without credentials: %d", rec.Code)
	}
}

// The audit entry's error object and the filters' length limit are
// documented as the code has them.
func TestOpenAPIAuditErrorAndFilterLimits(t *testing.T) {
	var doc struct {
		Comps struct {
			Schemas struct {
				AuditEntry struct {
					Properties struct {
						Error struct {
							OneOf []struct {
								Properties map[string]json.RawMessage `json:"properties"`
							} `json:"oneOf"`
						} `json:"error"`
					} `json:"properties"`
				} `json:"AuditEntry"`
				Filter struct {
					Properties map[string]struct {
						MaxLength int `json:"maxLength"`
					} `json:"properties"`
				} `json:"Filter"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	oneOf := doc.Comps.Schemas.AuditEntry.Properties.Error.OneOf
	if len(oneOf) != 2 {
		t.Fatalf("AuditEntry.error: %d alternatives, want an object or null", len(oneOf))
	}
	var documented []string
	for name := range oneOf[0].Properties {
		documented = append(documented, name)
	}
	slices.Sort(documented)
	if want := jsonNames(reflect.TypeOf(dlq.AuditError{})); !slices.Equal(documented, want) {
		t.Errorf("AuditEntry.error: documented %v, code has %v", documented, want)
	}
	for _, name := range []string{"q", "beer_id", "source_queue"} {
		if got := doc.Comps.Schemas.Filter.Properties[name].MaxLength; got != dlq.MaxFilterText {
			t.Errorf("Filter.%s maxLength %d, want %d", name, got, dlq.MaxFilterText)
		}
	}
}
