package enrichment

// Attempt classes recorded in message_attempts.error_class (through
// dlq.Attempts.Record before a retry; the DLQ consumer turns the last one into
// failure_reason).
const (
	ClassTransient   = "transient"
	ClassRateLimited = "rate_limited"
	ClassPermanent   = "permanent"
	ClassBreakerOpen = "breaker_open"
	ClassQuota       = "quota"
	ClassConfig      = "config"
	// ClassAuth: the provider refused the API key (401/403). The message is
	// deferred (consumer.go), so this class appears in beers.last_error and
	// logs, not in message_attempts.
	ClassAuth = "auth"
	// ClassD1Unavailable: D1 could not be used (down, refusing queries, a
	// table missing); the message is deferred like ClassAuth.
	ClassD1Unavailable = "d1_unavailable"
)

// ClassDeadline: the batch ran out of time before the message's call
// could start; the beer is parked (pending, due at once) for the catch-up.
const ClassDeadline = "deadline"
