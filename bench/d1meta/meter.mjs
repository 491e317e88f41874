// Meters a worker's D1 binding for `make bench`: every statement's D1 meta
// (rows_read, rows_written: what Cloudflare bills) is added to totals that
// GET /__d1meta returns and POST /__d1meta/reset zeroes. Only the bench
// uses it (e2e/bench_test.go, Options.Main); nothing here is deployed.
//
// D1's raw() returns no meta, so raw() is answered from all() here: rows
// are rebuilt from the result objects in their key order, which is the
// column order unless two columns share a name or a name looks like an
// integer (then it is wrong). redrive's retention and cron statements have
// neither; /admin/metrics' snapshot does (its columns named 0), so do not
// read it through a metered worker.

const totals = { statements: 0, rows_read: 0, rows_written: 0 };

function add(meta) {
  totals.statements++;
  if (!meta) return;
  totals.rows_read += meta.rows_read ?? 0;
  totals.rows_written += meta.rows_written ?? 0;
}

class MeteredStatement {
  constructor(inner) {
    this.inner = inner;
  }
  bind(...args) {
    return new MeteredStatement(this.inner.bind(...args));
  }
  async run() {
    const r = await this.inner.run();
    add(r.meta);
    return r;
  }
  async all() {
    const r = await this.inner.all();
    add(r.meta);
    return r;
  }
  async first(column) {
    const r = await this.all();
    const row = r.results[0];
    if (row === undefined) return null;
    return column === undefined ? row : row[column];
  }
  async raw(options) {
    const r = await this.all();
    if (r.results.length === 0) return [];
    const columns = Object.keys(r.results[0]);
    const rows = r.results.map((o) => columns.map((c) => o[c]));
    if (options?.columnNames) rows.unshift(columns);
    return rows;
  }
}

const metered = new WeakMap();

function meterDatabase(db) {
  if (!metered.has(db)) {
    metered.set(db, {
      prepare: (sql) => new MeteredStatement(db.prepare(sql)),
      batch: async (statements) => {
        const results = await db.batch(statements.map((s) => (s instanceof MeteredStatement ? s.inner : s)));
        for (const r of results) add(r.meta);
        return results;
      },
      exec: (sql) => db.exec(sql),
      dump: () => db.dump(),
    });
  }
  return metered.get(db);
}

function meterEnv(env) {
  return new Proxy(env, {
    get(target, key) {
      const value = Reflect.get(target, key);
      return key === "DB" && value ? meterDatabase(value) : value;
    },
  });
}

// withMeter wraps a worker's default export.
export function withMeter(worker) {
  return {
    async fetch(req, env, ctx) {
      const path = new URL(req.url).pathname;
      if (path === "/__d1meta") return Response.json(totals);
      if (path === "/__d1meta/reset" && req.method === "POST") {
        totals.statements = totals.rows_read = totals.rows_written = 0;
        return Response.json(totals);
      }
      return worker.fetch(req, meterEnv(env), ctx);
    },
    scheduled: (event, env, ctx) => worker.scheduled(event, meterEnv(env), ctx),
    queue: (batch, env, ctx) => worker.queue(batch, meterEnv(env), ctx),
  };
}
