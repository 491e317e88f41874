// node --test: the content type queueBody infers for every kind of body a
// producer can send, and that a json body's text gives the value back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { queueBody } from "./queuebody.mjs";

// What a consumer receives for a body sent with each content type.
const delivered = (body, contentType) =>
  contentType === "json" ? JSON.parse(JSON.stringify(body))
    : contentType === "bytes" ? new Uint8Array(body).buffer
    : structuredClone(body); // text and v8

test("text and JSON strings are text", () => {
  assert.deepEqual(queueBody(delivered("not json {", "text")), ["text", "not json {"]);
  assert.deepEqual(queueBody(delivered("a string", "json")), ["text", "a string"]);
});

test("JSON values are json, and their text parses back to the same value", () => {
  for (const v of [{ beer_id: "1", beer_name: "Hop <Stoopid> & co", z: 1, a: [1, 2.5, null, true] }, [1, "x"], 42, 0.1, true, null, {}, { "10": 1, b: { c: [] } }]) {
    for (const ct of ["json", "v8"]) {
      const [type, text] = queueBody(delivered(v, ct));
      assert.equal(type, "json", JSON.stringify(v));
      assert.deepEqual(JSON.parse(text), v);
      assert.equal(text, JSON.stringify(v)); // key order kept, nothing escaped or added
    }
  }
});

test("ArrayBuffers are bytes", () => {
  const [type, bytes] = queueBody(delivered(new Uint8Array([0, 1, 255]), "bytes"));
  assert.equal(type, "bytes");
  assert.deepEqual([...bytes], [0, 1, 255]);
});

test("values JSON cannot carry are v8", () => {
  const cyclic = {};
  cyclic.self = cyclic;
  for (const v of [new Date(0), new Map([[1, 2]]), new Uint8Array([1]), { a: undefined }, [1, , 3], -0, NaN, Infinity, { d: new Date(0) }, 10n, cyclic, undefined]) {
    const [type, text] = queueBody(typeof v === "bigint" ? v : structuredClone(v));
    assert.equal(type, "v8", String(v));
    assert.equal(typeof text, "string");
  }
});
