// Lighthouse (pinned in package.json) over the console's sign-in,
// overview, failures and groups pages in Debian Chromium, on its default
// mobile settings (a mid-range phone, simulated slow 4G and CPU). The
// signed-in pages get the credentials in sessionStorage from a script the
// browser runs before the page's own (the console keeps them there).
// Prints one JSON object: for each page, each run's category scores and
// metrics. Run by `make lighthouse` (through e2e/lighthouse_test.go, which
// starts the worker with demo data).
//
// With LIGHTHOUSE_SAVE=DIR in the environment it also writes each run's
// whole report (DIR/PAGE-RUN.json) and its trace (DIR/PAGE-RUN.trace.json,
// for Chromium's performance panel) for profiling: bootup-time,
// mainthread-work-breakdown, long-tasks, largest-contentful-paint-element.
//
//   node scripts/lighthouse.mjs --base http://127.0.0.1:8787 --key K --secret S [--runs 3] [--chromium /usr/bin/chromium]
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import lighthouse from "lighthouse";
import puppeteer from "puppeteer-core";

const arg = (name, dflt) => {
  const i = process.argv.indexOf("--" + name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const base = arg("base");
const key = arg("key");
const secret = arg("secret");
const runs = Number(arg("runs", "3"));
const chromium = arg("chromium", "/usr/bin/chromium");
const save = process.env.LIGHTHOUSE_SAVE;
if (save) mkdirSync(save, { recursive: true });
if (!base || !key || !secret) {
  console.error("usage: node scripts/lighthouse.mjs --base URL --key API_KEY --secret ADMIN_SECRET [--runs N]");
  process.exit(2);
}

// LIGHTHOUSE_PAGES (names, comma-separated) runs only those pages.
const only = process.env.LIGHTHOUSE_PAGES?.split(",");
const pages = [
  { name: "sign-in", hash: "", signedIn: false },
  { name: "overview", hash: "#/", signedIn: true },
  { name: "failures", hash: "#/failures", signedIn: true },
  { name: "groups", hash: "#/groups", signedIn: true },
].filter((p) => !only || only.includes(p.name));
const categories = ["performance", "accessibility", "best-practices", "seo"];
const metrics = {
  fcp_ms: "first-contentful-paint",
  lcp_ms: "largest-contentful-paint",
  tbt_ms: "total-blocking-time",
  cls: "cumulative-layout-shift",
  si_ms: "speed-index",
};

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update"],
});
const out = { lighthouse: (await import("lighthouse/package.json", { with: { type: "json" } })).default.version, chromium: await browser.version(), pages: [] };
try {
  for (const p of pages) {
    const result = { name: p.name, runs: [] };
    for (let i = 0; i < runs; i++) {
      const page = await browser.newPage();
      if (p.signedIn) {
        await page.evaluateOnNewDocument(
          (k, s) => {
            if (!location.protocol.startsWith("http")) return; // about:blank has no storage
            sessionStorage.setItem("redrive.apiKey", k);
            sessionStorage.setItem("redrive.adminSecret", s);
          },
          key,
          secret,
        );
      }
      const r = await lighthouse(base + "/" + p.hash, { logLevel: "error", output: "json", onlyCategories: categories }, undefined, page);
      const lhr = r.lhr;
      if (save) {
        writeFileSync(join(save, `${p.name}-${i + 1}.json`), JSON.stringify(lhr));
        writeFileSync(join(save, `${p.name}-${i + 1}.trace.json`), JSON.stringify(r.artifacts.Trace));
      }
      // benchmarkIndex: Lighthouse's measure of this machine's CPU at the
      // time (its simulated phone is 4× slower than the machine it runs on).
      const run = { scores: {}, metrics: {}, failed: [], benchmark_index: lhr.environment.benchmarkIndex };
      for (const c of categories) run.scores[c] = Math.round(lhr.categories[c].score * 100);
      for (const [k, id] of Object.entries(metrics)) run.metrics[k] = lhr.audits[id].numericValue;
      // Every scored audit below full marks, by id (informational ones left out).
      for (const c of categories) {
        for (const ref of lhr.categories[c].auditRefs) {
          const a = lhr.audits[ref.id];
          if (ref.weight > 0 && a.score !== null && a.score < 1) run.failed.push(ref.id);
        }
      }
      if (lhr.runtimeError) run.error = lhr.runtimeError.message;
      result.runs.push(run);
      await page.close();
      console.error(`lighthouse: ${p.name} run ${i + 1} (benchmark index ${run.benchmark_index}): ${JSON.stringify(run.scores)} ${JSON.stringify(run.metrics)} below full marks: ${run.failed.join(", ") || "none"}`);
    }
    out.pages.push(result);
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
