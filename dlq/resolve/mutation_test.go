//go:build mutation

package resolve

// Under the mutation build tag (`make mutate` passes it to gremlins, which
// runs the whole package's tests once per mutant), the property test runs
// 30 random sequences instead of 200; a plain `go test` keeps all 200.
func init() { taskPropertySequences = 30 }
