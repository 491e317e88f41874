// Package version says which worker version is running: Cloudflare's
// version metadata binding (CF_VERSION_METADATA: id, tag, timestamp) when
// there is one, and the build's version string (main.version, set by the
// Makefile). Failed attempts and DLQ rows are stamped with Stamp, so an
// operator can tell failures of the old code from failures of the fix.
package version

// Info is the running worker's version.
type Info struct {
	// ID is the Workers version id (a UUID; wrangler dev gives a random one
	// per session). Empty without the binding.
	ID string `json:"id"`
	// Tag is the version's tag (wrangler versions upload --tag), often empty.
	Tag string `json:"tag"`
	// Timestamp is when the version was uploaded (RFC 3339), as given.
	Timestamp string `json:"timestamp"`
	// Build is the build's version string (git describe).
	Build string `json:"build"`
}

// Stamp is the version written on failed attempts and DLQ rows and matched
// by the version filter: the version id when the runtime gives one, else
// the build's version string.
func (i Info) Stamp() string {
	if i.ID != "" {
		return i.ID
	}
	return i.Build
}
