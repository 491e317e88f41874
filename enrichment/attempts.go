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
)
