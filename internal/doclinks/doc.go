// Package doclinks holds only a test: it keeps the repository's documents and
// the references to them true. README.md and docs/*.md link to each other
// and to files; code, tests, schema and config comments cite sections of
// those pages in one form, the page's path and the heading in double quotes,
// as in `docs/costs.md "What it costs"` (`README "Deploying"` for README.md); and Go comments name repository paths and package
// identifiers. A page or heading that moves, or a file that is renamed,
// fails `go test ./internal/doclinks` until every reference follows it.
// It also keeps docs/architecture.md "Layout" naming every folder that holds
// Go code, and Go comments free of issue numbers.
//
// It lives under internal/ beside the other repository-wide test helpers
// (wranglerconfig, apicontract) because what it checks belongs to no single
// package: it reads the whole tree from the module root.
package doclinks
