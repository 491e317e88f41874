package dlq

import "encoding/json"

// JSONList is qs as a JSON array ("[]" when empty).
func JSONList(qs []string) string {
	if len(qs) == 0 {
		return "[]"
	}
	js, _ := json.Marshal(qs)
	return string(js)
}
