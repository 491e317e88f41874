//go:build mutation

package incidents

// Under the mutation build tag (`make mutate` passes it to gremlins, which
// runs the whole package's tests once per mutant), the model test runs 8
// seeds instead of 40; a plain `go test` keeps all 40.
func init() { modelSeeds = 8 }
