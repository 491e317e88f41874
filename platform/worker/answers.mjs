// Fetch calls waiting for Go's answer (worker.mjs), with a time limit.
//
// Go answers a call through binding.respond or binding.reject
// (platform/serve.go), set once, so that a call hands Go a number instead of
// two new functions. respond only hands the answer's parts to the waiting
// call, which makes the Response itself: Go answers whenever its scheduler
// runs the call's goroutine, which may be inside another call (its
// serveHTTP, a D1 promise's callback), and a Response made there is that
// call's: workerd then refuses to send its body for this one ("Cannot
// perform I/O on behalf of a different request", the body's
// ReadableStreamSource), and the call answers 500.
//
// A call Go has not answered within limitMs is answered 503 TIMEOUT with
// the JSON error envelope and logged. Without a limit, a call whose
// goroutine never answers (it waits for a D1 or other promise that never
// settles, or is blocked forever) holds its connection open for good:
// workerd keeps a call alive while it has I/O outstanding, and the client
// waits with it. Go's late answer to such a call is dropped: throwing
// inside Go's respond call would panic the Go program.

// answerLimitMs is the limit worker.mjs uses: four times D1's 30 s per
// statement or batch, far above any answer redrive makes (the slowest
// measured, a daily cron over 1,000,000 rows run through POST /__dev/cron,
// took 8 s).
export const answerLimitMs = 120_000;

export function makeAnswers(limitMs = answerLimitMs, log = console.error) {
  const waiting = new Map();
  let lastCall = 0;
  const settle = (id) => {
    const call = waiting.get(id);
    waiting.delete(id);
    return call;
  };
  return {
    // binding is what Go calls (binding.respond and binding.reject).
    binding: {
      respond(id, status, headers, body) {
        settle(id)?.resolve({ status, headers, body });
      },
      reject(id, message) {
        settle(id)?.reject(new Error(message));
      },
    },
    // call hands a request to Go (start(id)) and resolves to Go's answer
    // ({status, headers, body}), or to null when limitMs passed first
    // (then timeoutResponse(req) is the answer).
    call(start) {
      const id = ++lastCall;
      let timer;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        timer = setTimeout(() => {
          if (waiting.delete(id)) resolve(null);
        }, limitMs);
        start(id);
      }).finally(() => clearTimeout(timer));
    },
    // pending is the number of calls waiting for Go.
    pending: () => waiting.size,
    // timeoutResponse is the 503 answer of a call that reached the limit;
    // the request id is made here, since Go's is unknown.
    timeoutResponse(req) {
      const requestId = crypto.randomUUID();
      log(JSON.stringify({
        time: new Date().toISOString(), level: "ERROR", msg: "fetch: no answer within the limit; answered 503",
        service: "redrive", request_id: requestId, method: req.method, path: new URL(req.url).pathname,
        limit_ms: limitMs,
      }));
      return new Response(JSON.stringify({
        success: false, requestId,
        error: { message: `the worker did not answer within ${limitMs / 1000} s; try again`, code: "TIMEOUT" },
      }) + "\n", {
        status: 503,
        headers: { "Content-Type": "application/json; charset=utf-8", "Retry-After": "1", "X-Request-ID": requestId },
      });
    },
  };
}
