// node --test: header lists (headers.mjs) as platform/headers.go reads and
// writes them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { headerList, headerPairs } from "./headers.mjs";

test("a Headers object becomes name\\nvalue\\n per header, in Headers' order", () => {
  const h = new Headers([["X-Api-Key", "k"], ["accept", "*/*"], ["x-empty", ""]]);
  assert.equal(headerList(h), "accept\n*/*\nx-api-key\nk\nx-empty\n\n");
  assert.equal(headerList(new Headers()), "");
});

test("a list reads back into pairs, repeated names kept", () => {
  assert.deepEqual(headerPairs("content-type\napplication/json\nset-cookie\na=1\nset-cookie\nb=2\nx-empty\n\n"),
    [["content-type", "application/json"], ["set-cookie", "a=1"], ["set-cookie", "b=2"], ["x-empty", ""]]);
  assert.deepEqual(headerPairs(""), []);
  const res = new Response(null, { headers: headerPairs("set-cookie\na=1\nset-cookie\nb=2\n") });
  assert.deepEqual(res.headers.getSetCookie(), ["a=1", "b=2"]);
});

test("a list written from pairs reads back to the same pairs", () => {
  const pairs = [["a", "1"], ["b", "x y"], ["a", "2"]];
  assert.deepEqual(headerPairs(headerList(pairs)), pairs);
});
