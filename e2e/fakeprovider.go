//go:build e2e

package e2e

import "github.com/redrive/redrive/internal/fakeprovider"

// The fake enrichment provider each worker of the tests talks to.
type (
	FakeProvider = fakeprovider.Provider
	Behavior     = fakeprovider.Behavior
	Call         = fakeprovider.Call
)

// StartFakeProvider starts one on a free loopback port.
func StartFakeProvider() (*FakeProvider, error) { return fakeprovider.Start("127.0.0.1:0") }
