package handlers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redrive/redrive/internal/apicontract"
)

// The contract test of the handlers: every response do() gets is checked
// against openapi.json (internal/apicontract); a mismatch fails the package
// (TestMain), naming the request. Routes outside the document (/__dev/*,
// enabled by DEV_ROUTES) are not checked.
var contract struct {
	v          *apicontract.Validator
	mu         sync.Mutex
	checked    int
	mismatches []string
}

func TestMain(m *testing.M) {
	v, err := apicontract.New(openAPIDocument)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	contract.v = v
	code := m.Run()
	if len(contract.mismatches) > 0 {
		fmt.Fprintf(os.Stderr, "%d of %d responses do not match openapi.json:\n  %s\n", len(contract.mismatches),
			contract.checked, strings.Join(contract.mismatches, "\n  "))
		code = 1
	} else if testing.Verbose() {
		fmt.Printf("contract: %d responses checked against openapi.json\n", contract.checked)
	}
	os.Exit(code)
}

// checkContract checks one exchange of do().
func checkContract(req *http.Request, body string, rec *httptest.ResponseRecorder) {
	if strings.HasPrefix(req.URL.Path, "/__dev/") || contract.v == nil {
		return
	}
	err := contract.v.Check(req, []byte(body), rec.Code, rec.Header(), rec.Body.Bytes())
	contract.mu.Lock()
	defer contract.mu.Unlock()
	contract.checked++
	if err != nil {
		contract.mismatches = append(contract.mismatches, apicontract.Describe(req, rec.Code)+": "+err.Error())
	}
}

func TestContractValidatorLoadsTheDocument(t *testing.T) {
	if _, err := apicontract.New(openAPIDocument); err != nil {
		t.Fatal(err)
	}
}
