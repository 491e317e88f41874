// The OpenAPI document's schemas compile under ajv, a JavaScript JSON
// Schema validator (draft 2020-12, which OpenAPI 3.1 names): every
// "pattern" is an ECMA-262 regular expression, as JSON Schema requires, so
// that clients generated in other languages can validate with it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";

const doc = JSON.parse(readFileSync(new URL("./openapi.json", import.meta.url), "utf8"));

function patterns(node, path, out) {
  if (node && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) {
      if (k === "pattern" && typeof v === "string") out.push([path.join("/"), v]);
      else patterns(v, [...path, k], out);
    }
  }
  return out;
}

// schemas returns an ajv holding the document's components (the refs
// "#/components/schemas/X" resolve inside it) under the id openapi.json.
function schemas(options) {
  const ajv = new Ajv2020({ strict: true, validateFormats: false, ...options });
  ajv.addVocabulary(["components"]); // the container, not a keyword to check
  ajv.addSchema({ $id: "openapi.json", components: doc.components });
  return ajv;
}

test("every component schema compiles under ajv (draft 2020-12, strict)", () => {
  const ajv = schemas({ allErrors: true });
  const names = Object.keys(doc.components.schemas);
  assert.ok(names.length > 10, `only ${names.length} schemas`);
  for (const name of names) {
    assert.doesNotThrow(() => assert.equal(typeof ajv.getSchema(`openapi.json#/components/schemas/${name}`), "function"), name);
  }
});

test("every pattern is an ECMA-262 regular expression (unicode mode, as ajv compiles it)", () => {
  const found = patterns(doc, [], []);
  assert.ok(found.length > 0, "no pattern in the document");
  for (const [where, p] of found) {
    assert.doesNotThrow(() => new RegExp(p, "u"), `${where}: ${p}`);
  }
});

test("the Beer id pattern refuses control characters, C1 included, and keeps the rest", () => {
  const id = schemas().compile({ $ref: "openapi.json#/components/schemas/Beer/properties/beer_id" });
  for (const ok of ["b1", "a/b?c#d%e", "Ünïcode ☕", "x\u00a0y"]) assert.ok(id(ok), ok);
  for (const bad of ["a\u0000b", "tab\there", "del\u007f", "c1\u0085", "c1\u009f", "", ".", ".."]) assert.ok(!id(bad), JSON.stringify(bad));
});
