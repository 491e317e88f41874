-- 0010: why the provider's circuit breaker opened: 'transient' (the threshold
-- of consecutive transient failures) or 'auth' (the provider refused the API
-- key: 401/403, opens at once); NULL while closed. The enrichment_auth_failing
-- alert fires while it is open because of auth.
ALTER TABLE enrichment_breaker ADD COLUMN cause TEXT;
