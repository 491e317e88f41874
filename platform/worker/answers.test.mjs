// node --test: the fetch calls waiting for Go (answers.mjs), and their limit.
import { test } from "node:test";
import assert from "node:assert/strict";
import { answerLimitMs, makeAnswers } from "./answers.mjs";

test("Go's answer reaches its own call, and the call's timer is cleared", async () => {
  const a = makeAnswers(50);
  const first = a.call((id) => setTimeout(() => a.binding.respond(id, 200, "x\n1\n", null), 5));
  const second = a.call((id) => a.binding.respond(id, 404, "", null));
  assert.deepEqual(await second, { status: 404, headers: "", body: null });
  assert.deepEqual(await first, { status: 200, headers: "x\n1\n", body: null });
  assert.equal(a.pending(), 0);
});

test("Go's reject fails its call", async () => {
  const a = makeAnswers(50);
  await assert.rejects(a.call((id) => a.binding.reject(id, "serveHTTP: panic")), /serveHTTP: panic/);
  assert.equal(a.pending(), 0);
});

test("a call Go never answers ends at the limit with 503 TIMEOUT, and Go's late answer is dropped", async () => {
  const logged = [];
  const a = makeAnswers(30, (line) => logged.push(JSON.parse(line)));
  let callID;
  const start = Date.now();
  const res = await a.call((id) => { callID = id; });
  assert.equal(res, null);
  assert.ok(Date.now() - start >= 25, "resolved before the limit");
  assert.equal(a.pending(), 0);
  // Late answers: neither throws (it would panic the Go program).
  a.binding.respond(callID, 200, "", null);
  a.binding.reject(callID, "late");

  const r = a.timeoutResponse(new Request("http://x.test/admin/metrics?secret=no"));
  assert.equal(r.status, 503);
  assert.equal(r.headers.get("content-type"), "application/json; charset=utf-8");
  assert.equal(r.headers.get("retry-after"), "1");
  const body = await r.json();
  assert.equal(body.success, false);
  assert.equal(body.error.code, "TIMEOUT");
  assert.match(body.requestId, /^[0-9a-f-]{36}$/);
  assert.equal(r.headers.get("x-request-id"), body.requestId);
  assert.equal(logged.length, 1);
  assert.equal(logged[0].level, "ERROR");
  assert.equal(logged[0].request_id, body.requestId);
  assert.equal(logged[0].path, "/admin/metrics"); // no query string in the log
  assert.equal(logged[0].limit_ms, 30);
});

test("the worker's limit is finite and above D1's 30 s per statement", () => {
  assert.ok(Number.isFinite(answerLimitMs) && answerLimitMs > 30_000);
});
