// Headers cross between the entry module and Go (platform/headers.go) as one
// string, a header list: each name and each value followed by "\n". A Fetch
// header name or value never holds "\n" (Headers refuses one), so nothing
// needs escaping, and Go splits it without a JSON decoder.

// headerList writes the list of a Headers object (or any iterable of pairs).
export function headerList(headers) {
  let s = "";
  for (const [name, value] of headers) s += name + "\n" + value + "\n";
  return s;
}

// headerPairs reads a list back into [name, value] pairs, as the Response
// constructor takes them (a name may repeat: set-cookie).
export function headerPairs(list) {
  const parts = list.split("\n");
  const pairs = [];
  for (let i = 0; i + 1 < parts.length; i += 2) pairs.push([parts[i], parts[i + 1]]);
  return pairs;
}
