// Builds the operator console into build/console (the assets directory of
// wrangler.jsonc): console/src bundled by esbuild (Preact, uPlot; nothing is
// fetched from elsewhere at run time; uPlot is a chunk of its own, and the
// CSS travels inside the JavaScript), console/public copied as it is. Fails when the
// whole console is over its budget of 150 KB gzipped.
//
//   node console/build.mjs [--out DIR]
import { build, transform } from "esbuild";
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const outArg = process.argv.indexOf("--out");
const out = outArg > 0 ? process.argv[outArg + 1] : join(here, "..", "build", "console");
const budget = 150 * 1024;

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
cpSync(join(here, "public"), out, { recursive: true });
await build({
  entryPoints: { console: join(here, "src", "main.jsx") },
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  outdir: out,
  splitting: true, // uPlot is a chunk of its own, loaded by the charts only
  chunkNames: "[name]-[hash]",
  // Each imported .css file is its minified text (console/src/style.js
  // applies it as a constructed stylesheet): no render-blocking <link>.
  plugins: [
    {
      name: "css-text",
      setup(b) {
        b.onLoad({ filter: /\.css$/ }, async (args) => {
          const { code } = await transform(readFileSync(args.path, "utf8"), { loader: "css", minify: true, target: "chrome110" });
          return { contents: code, loader: "text" };
        });
      },
    },
  ],
  legalComments: "none",
  logLevel: "warning",
  define: { "process.env.NODE_ENV": '"production"' },
});

let total = 0;
const lines = [];
for (const f of readdirSync(out).sort()) {
  const p = join(out, f);
  if (!statSync(p).isFile()) continue;
  const raw = readFileSync(p);
  const gz = gzipSync(raw, { level: 9 }).length;
  total += gz;
  lines.push(`  ${f.padEnd(14)} ${String(raw.length).padStart(7)} B  ${String(gz).padStart(6)} B gzipped`);
}
console.log(`console: ${out}\n${lines.join("\n")}\n  total ${(total / 1024).toFixed(1)} KB gzipped (budget ${budget / 1024} KB)`);
if (total > budget) {
  console.error(`console: ${total} B gzipped is over the budget of ${budget} B`);
  process.exit(1);
}
