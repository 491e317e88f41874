// Size of a wasm build by Go package, from its name section.
//
//   node bench/init/wasmsize.mjs APP.WASM [TOP=40] [--funcs]
//
// Prints the module's size, its code, data and name sections, and the code
// bytes of each package (the package of a function's name: "(*p/q.T).M",
// "p/q.F" and "p/q.F[T]" all count for p/q), largest first; --funcs lists
// the largest functions instead. TinyGo builds keep the name section
// (scripts/tinygo.sh; wasm-opt runs with -g); the standard-Go build is
// stripped (-ldflags "-s -w"), build without -s to see its names.
// "<interface calls>" are TinyGo's interface method thunks, which hold the
// inlined methods of every type that implements the interface.
import { readFileSync } from "node:fs";

const [file, topArg, mode] = process.argv.slice(2);
if (!file) {
  console.error("usage: node bench/init/wasmsize.mjs APP.WASM [TOP] [--funcs]");
  process.exit(2);
}
const top = Number(topArg ?? 40);
const b = readFileSync(file);

function leb(i) {
  let r = 0, s = 0, x;
  do { x = b[i++]; r += (x & 0x7f) * 2 ** s; s += 7; } while (x & 0x80);
  return [r, i];
}
function skipLimits(j) {
  const flags = b[j++];
  j = leb(j)[1];
  return flags & 1 ? leb(j)[1] : j;
}

let imports = 0, code = 0, data = 0, names = 0;
const bodies = [], fnNames = new Map();
for (let i = 8; i < b.length;) {
  const id = b[i];
  const [size, start] = leb(i + 1);
  const end = start + size;
  if (id === 2) { // imports: only function imports take function indices
    let [n, j] = leb(start);
    for (; n > 0; n--) {
      let l;
      [l, j] = leb(j); j += l;
      [l, j] = leb(j); j += l;
      const kind = b[j++];
      if (kind === 0) { j = leb(j)[1]; imports++; }
      else if (kind === 1) j = skipLimits(j + 1);
      else if (kind === 2) j = skipLimits(j);
      else j += 2;
    }
  } else if (id === 10) {
    code = size;
    let [n, j] = leb(start);
    for (; n > 0; n--) {
      const [s, k] = leb(j);
      bodies.push(s + (k - j));
      j = k + s;
    }
  } else if (id === 11) {
    data = size;
  } else if (id === 0) {
    const [l, j] = leb(start);
    if (b.toString("utf8", j, j + l) === "name") {
      names = size;
      for (let k = j + l; k < end;) {
        const sub = b[k];
        const [ssz, s0] = leb(k + 1);
        if (sub === 1) {
          let [n, q] = leb(s0);
          for (; n > 0; n--) {
            let idx, nl;
            [idx, q] = leb(q);
            [nl, q] = leb(q);
            fnNames.set(idx, b.toString("utf8", q, q + nl));
            q += nl;
          }
        }
        k = s0 + ssz;
      }
    }
  }
  i = end;
}

function pkg(name) {
  if (name === undefined) return "<no name>";
  if (name.startsWith("interface:")) return "<interface calls>";
  const s = name.replace(/^[(*]+/, "").split("[")[0];
  const slash = s.lastIndexOf("/");
  const dot = s.indexOf(".", slash + 1);
  if (dot < 0) return "<C and other>";
  return s.slice(0, dot);
}

const total = bodies.reduce((a, x) => a + x, 0);
const by = new Map();
bodies.forEach((size, k) => {
  const name = fnNames.get(k + imports);
  const key = mode === "--funcs" ? name ?? `#${k + imports}` : pkg(name);
  by.set(key, (by.get(key) ?? 0) + size);
});
console.log(`${file}: ${b.length} bytes; code ${code} (${bodies.length} functions), data ${data}, names ${names}`);
for (const [k, v] of [...by].sort((x, y) => y[1] - x[1]).slice(0, top)) {
  console.log(`${String(v).padStart(9)} ${(100 * v / total).toFixed(1).padStart(5)}%  ${k}`);
}
