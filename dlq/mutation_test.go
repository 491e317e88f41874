//go:build mutation

package dlq

// Under the mutation build tag (`make mutate` passes it to gremlins, which
// runs the whole package's tests once per mutant), TestReplayTaskProperties
// runs 30 random sequences instead of 200, as with -short: 35 s of the
// package's 56 s went to that one test. Every other test runs unchanged,
// and a plain `go test ./dlq` keeps all 200 sequences.
func init() { taskPropertySequences, movePropertySequences = 30, 30 }
