package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/redrive/redrive/client"
)

// maxPollBackoff bounds the wait between the tries of a failing poll.
const maxPollBackoff = time.Minute

// retrier keeps tail and tasks watch running through a worker that fails
// for a while (a D1 hiccup, a deploy, a dropped connection). Once the
// worker has answered, a poll that gets a 429, a 5xx (other than 503
// NOT_CONFIGURED) or no answer at all is reported on stderr and tried
// again, after a wait that doubles from the poll interval up to a minute.
// Any other error, or any error before the first answer (a wrong URL or
// key), ends the command.
type retrier struct {
	stderr   io.Writer
	answered bool
	failures int
}

// ok records an answer, saying so when it ends a run of failures.
func (r *retrier) ok() {
	if r.failures > 0 {
		fmt.Fprintf(r.stderr, "redrive: the worker answers again after %d failed tries\n", r.failures)
	}
	r.answered, r.failures = true, 0
}

// again reports whether to try the failed poll again, having waited; false
// when err ends the command or ctx ends during the wait.
func (r *retrier) again(ctx context.Context, err error, interval time.Duration) bool {
	if !r.answered || !transient(err) || ctx.Err() != nil {
		return false
	}
	r.failures++
	wait := pollWait(interval, r.failures)
	fmt.Fprintf(r.stderr, "redrive: %v; trying again in %s\n", err, wait)
	return sleep(ctx, wait) == nil
}

// try runs poll until it succeeds, then records the answer; it returns
// poll's error once again says not to try again.
func (r *retrier) try(ctx context.Context, interval time.Duration, poll func() error) error {
	for {
		err := poll()
		if err == nil {
			r.ok()
			return nil
		}
		if !r.again(ctx, err, interval) {
			return err
		}
	}
}

// transient reports whether err is a failure worth another try: the worker
// answered 429 or 5xx (but not 503 NOT_CONFIGURED, which needs an
// operator), or the request got no answer.
func transient(err error) bool {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		return !client.IsAuth(err) && (apiErr.Status == http.StatusTooManyRequests || apiErr.Status >= 500)
	}
	var urlErr *url.Error
	return errors.As(err, &urlErr)
}

// pollWait is the wait before try n+1 of a poll that failed n times in a
// row: the interval, doubled per failure after the first, at most a minute.
func pollWait(interval time.Duration, failures int) time.Duration {
	wait := interval
	for i := 1; i < failures && wait < maxPollBackoff; i++ {
		wait *= 2
	}
	return min(wait, maxPollBackoff)
}
