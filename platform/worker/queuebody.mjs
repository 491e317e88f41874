// The content type of a delivered queue message. Cloudflare Queues tells a
// consumer the body, not the contentType it was sent with; redrive needs the
// type to replay a message exactly as it was produced. Imported by worker.mjs;
// tested with node --test (queuebody.test.mjs).

// plainJSON reports whether JSON.parse(JSON.stringify(v)) gives v back: only
// null, booleans, strings, finite numbers (not -0), dense arrays and plain
// objects of those, nested at most 512 deep.
function plainJSON(v, depth) {
  switch (typeof v) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(v) && !Object.is(v, -0);
    case "object":
      break;
    default:
      return false;
  }
  if (v === null) return true;
  if (depth > 512) return false;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!(i in v) || !plainJSON(v[i], depth + 1)) return false;
    return Object.keys(v).length === v.length;
  }
  const proto = Object.getPrototypeOf(v);
  if ((proto !== Object.prototype && proto !== null) || Object.getOwnPropertySymbols(v).length > 0) return false;
  for (const k of Object.keys(v)) if (!plainJSON(v[k], depth + 1)) return false;
  return true;
}

// queueBody tells the content type a delivered message body was sent with
// (a consumer is not told) and gives its text form, for platform.message:
// [type, text], or ["bytes", Uint8Array]. A string was sent as text (or as a
// JSON string, which text delivers identically); an ArrayBuffer as bytes; a
// value JSON round-trips as json; anything else (Date, Map, typed arrays,
// undefined, ...) only v8 can carry, and its text is lossy.
export function queueBody(body) {
  if (typeof body === "string") return ["text", body];
  if (body instanceof ArrayBuffer) return ["bytes", new Uint8Array(body)];
  if (plainJSON(body, 0)) return ["json", JSON.stringify(body)];
  let text;
  try {
    text = JSON.stringify(body);
  } catch {}
  return ["v8", typeof text === "string" ? text : String(body)];
}

