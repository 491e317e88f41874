// The request body on its way to Go (platform/serve.go): refused before it
// is read when the headers alone decide the answer, else read once, capped.
import { headerPairs } from "./headers.mjs";

// gated shows a request that has a body to Go without it first
// (binding.gate, platform.Gate: headers only, synchronous). A request its
// route refuses for its credentials, or that reaches no route, is answered
// there with the envelope and headers serveHTTP would give it, and its
// body is never read: an anonymous 1 MB post costs no memory, in JS or in
// the Go heap, and a body that never ends still gets its 401. The
// comparisons stay in Go, in constant time. null: read the body and serve.
export function gated(binding, req, head) {
  if (req.body === null || binding.gate === undefined) return null;
  const refused = binding.gate(head);
  if (refused === null) return null;
  const [status, headers, body] = refused;
  return new Response(body, { status, headers: headerPairs(headers) });
}

// readBody returns the request body as one Uint8Array (null when there is
// none) of at most `cap` bytes: the Go side refuses anything over its limit,
// so more than one byte past it is never needed. The rest of an oversized
// body is read and dropped, not cancelled: in workerd a cancelled request
// body broke the connection, and the next request on it failed with 503.
export async function readBody(req, cap) {
  if (req.body === null) return null;
  const reader = req.body.getReader();
  const chunks = [];
  let size = 0;
  while (size < cap) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  if (size >= cap) while (!(await reader.read()).done);
  const body = new Uint8Array(Math.min(size, cap));
  let at = 0;
  for (const c of chunks) {
    const part = c.subarray(0, body.length - at);
    body.set(part, at);
    at += part.length;
  }
  return body;
}
