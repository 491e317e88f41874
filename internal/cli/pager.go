package cli

import (
	"encoding/json"
	"net/http"
)

// cursorPage ends the data of every cursor-paged list (ls, groups, audit):
// the page size and where the next page starts.
type cursorPage struct {
	Limit      int     `json:"limit"`
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

func (c *cursorPage) paging() *cursorPage { return c }

// page is GET /admin/dlq's data.
type page struct {
	Messages        []json.RawMessage `json:"messages"`
	TotalCount      int               `json:"total_count"`
	TotalCountExact bool              `json:"total_count_exact"`
	cursorPage
}

func (p *page) items() *[]json.RawMessage { return &p.Messages }

// groupsPage is GET /admin/dlq/groups' data.
type groupsPage struct {
	Groups []json.RawMessage `json:"groups"`
	cursorPage
}

func (p *groupsPage) items() *[]json.RawMessage { return &p.Groups }

// auditPage is GET /admin/audit's data.
type auditPage struct {
	Entries []json.RawMessage `json:"entries"`
	cursorPage
}

func (p *auditPage) items() *[]json.RawMessage { return &p.Entries }

// pager is a page of a cursor-paged list: its paging fields and its items.
type pager[P any] interface {
	*P
	paging() *cursorPage
	items() *[]json.RawMessage
}

// follow gets the page at the request's cursor and, with all, every page
// after it (setCursor moves the request on), appending each page's items
// to the first's; the result carries the last page's cursor.
func follow[P any, PP pager[P]](all bool, get func() (P, error), setCursor func(*string)) (P, error) {
	out, err := get()
	last := out
	for err == nil && all && PP(&last).paging().HasMore {
		setCursor(PP(&last).paging().NextCursor)
		if last, err = get(); err == nil {
			items := PP(&out).items()
			*items = append(*items, *PP(&last).items()...)
			to, from := PP(&out).paging(), PP(&last).paging()
			to.NextCursor, to.HasMore = from.NextCursor, from.HasMore
		}
	}
	return out, err
}

// list follows a list's pages (see follow): call sends the request at
// *cursor, the request's cursor parameter.
func list[P any, PP pager[P]](all bool, cursor **string, call func() (*http.Response, error)) (P, error) {
	return follow[P, PP](all, func() (pg P, err error) {
		_, err = into(&pg)(call())
		return pg, err
	}, func(next *string) { *cursor = next })
}

// printList prints a list's data v as JSON, or a table: header, then one
// row of cells per item.
func (a *app) printList(v any, items []json.RawMessage, header []string, cells func(json.RawMessage) ([]any, error)) error {
	if a.json {
		return a.printJSON(v)
	}
	t := newTable(a.env.Stdout, header...)
	for _, raw := range items {
		row, err := cells(raw)
		if err != nil {
			return err
		}
		t.row(row...)
	}
	return t.flush()
}
