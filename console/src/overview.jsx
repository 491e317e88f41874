import { useEffect, useRef, useState } from "preact/hooks";
import { get, post } from "./api.js";
import { BarChart, daily } from "./chart.jsx";
import { Bars, ErrorBox, Needs, Table, Time } from "./components.jsx";
import { QueueBacklogs } from "./queues.jsx";
import { href, pipeline } from "./router.js";
import { can, EVERY_NOTE, pipelines, scoped, useSignal } from "./state.js";
import { hours, utc } from "./time.js";

// The overview refreshes itself at most once a minute, and only while the
// tab is visible: every refresh is six small API calls.
const REFRESH_MS = 60_000;

// loadOverview reads the stats and the chart of the selected pipeline
// (name; "" = all): the response's not_filtered names what still covers
// every pipeline. Alerts, jobs and queue backlogs are of every pipeline: a
// key limited to pipelines may not read them (null: the page says so).
async function loadOverview(name) {
  const every = !scoped();
  const [stats, series, alerts, jobs, breaker, queues] = await Promise.all([
    get("/admin/dlq/stats", name ? { pipeline: name } : undefined),
    get("/admin/dlq/timeseries", name ? { pipeline: name } : undefined),
    every ? get("/admin/alerts") : null,
    every ? get("/admin/jobs") : null,
    every ? get("/admin/enrichment/breaker") : null,
    every ? bonus(get("/admin/queues")) : null, // the backlogs are a bonus: the page shows without them
  ]);
  return { stats, series, alerts, jobs, breaker, queues, at: Date.now() };
}

// bonus is what p resolves to within BONUS_MS, else null (a late or failed
// answer does not hold the page back).
const BONUS_MS = 4_000;
const bonus = (p) => Promise.race([p.catch(() => null), new Promise((done) => setTimeout(() => done(null), BONUS_MS))]);

export function Overview() {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const last = useRef(0);
  const busy = useRef(false);
  const inUtc = useSignal(utc);
  const chosen = useSignal(pipeline);
  const names = useSignal(pipelines);
  const many = names?.length > 1;

  const refresh = async (force) => {
    if (busy.current || (!force && Date.now() - last.current < REFRESH_MS)) return;
    busy.current = true;
    last.current = Date.now();
    const name = pipeline.value;
    try {
      setData(await loadOverview(name));
      setError(null);
    } catch (e) {
      setError(e);
      last.current = 0; // asked again at the next tick, not in a minute
    } finally {
      busy.current = false;
    }
    if (pipeline.value !== name) refresh(true); // switched while loading
  };
  useEffect(() => {
    refresh(true);
    const tick = () => document.visibilityState === "visible" && refresh(false);
    const timer = setInterval(tick, 5_000);
    document.addEventListener("visibilitychange", tick);
    return () => {
      clearInterval(timer);
      document.removeEventListener("visibilitychange", tick);
    };
  }, []);
  // Another pipeline selected: its stats now (not at the next minute).
  const first = useRef(true);
  useEffect(() => {
    if (first.current) first.current = false;
    else refresh(true);
  }, [chosen]);

  // The page waits for the pipelines' names too (asked at the same time):
  // a "By pipeline" table that came after them would shift what follows.
  if (!data || names === null) return error ? <ErrorBox error={error} /> : <p aria-busy="true">Loading…</p>;
  const { stats, series, alerts, jobs, breaker, queues } = data;
  const s = stats.by_status;
  const chosenQueue = stats.by_pipeline.find((x) => x.pipeline === chosen)?.queue;
  const firing = alerts?.alerts.filter((a) => a.firing) ?? [];
  const last24 = series.hourly.slice(-24).map((b) => ({ start: b.start, count: b.failures }));
  const week = daily(series.hourly, 7, inUtc);
  return (
    <div class="overview">
      <p class="muted small" aria-live="polite">
        Updated <Time ms={data.at} />; refreshes every minute while this tab is visible.{" "}
        <button type="button" class="link" onClick={() => refresh(true)}>
          Refresh
        </button>
      </p>
      {stats.current_version && (
        <p class="small version-line">
          Live version <code class="version live">{stats.current_version.stamp}</code>
          {stats.current_version.tag ? ` (${stats.current_version.tag})` : ""}. <a href={href("/groups")}>Failure groups</a> ·{" "}
          <a href={href("/failures", { version_not: stats.current_version.stamp })}>failures of older versions</a>
        </p>
      )}
      <ErrorBox error={error} />
      {stats.pipeline && (
        <p class="small" role="note">
          Counts of {stats.pipeline} only, with its new failures and charts; the oldest pending age and the repeat failures cover all pipelines.
        </p>
      )}
      <section aria-labelledby="h-status">
        <h2 id="h-status">Dead-lettered messages</h2>
        <ul class="cards">
          <Card label="Pending" value={s.pending} link={href("/failures", { status: "pending" })} strong={s.pending > 0} />
          <Card label="Replaying" value={s.replaying} link={href("/failures", { status: "replaying" })} />
          <Card label="Replayed" value={s.replayed} link={href("/failures", { status: "replayed" })} />
          <Card label="Acknowledged" value={s.acknowledged} link={href("/failures", { status: "acknowledged" })} />
          <Card label="Oldest pending" value={s.pending ? hours(stats.oldest_pending_age_hours) : "—"} />
          <Card label="New failures, 24 h" value={stats.last_24h.new_failures_24h} />
        </ul>
        <Table
          label="Rows by source queue"
          caption="By source queue"
          empty="No rows."
          rows={stats.by_source_queue}
          rowKey={(q) => q.source_queue}
          columns={[
            {
              head: "Source queue",
              // With a pipeline selected, only its own queue's rows can be listed
              // (another queue with that pipeline is 400 INVALID_FILTER).
              cell: (q) =>
                !chosen || q.source_queue === chosenQueue ? <a href={href("/failures", { source_queue: q.source_queue })}>{q.source_queue}</a> : q.source_queue,
            },
            { head: "Pending", class: "num", cell: (q) => q.pending },
            { head: "All", class: "num", cell: (q) => q.total },
          ]}
        />
        {many && stats.by_pipeline.length > 0 && (
          <Table
            label="Rows by pipeline"
            caption="By pipeline"
            empty="No pipelines."
            rows={stats.by_pipeline}
            rowKey={(x) => x.pipeline}
            columns={[
              { head: "Pipeline", cell: (x) => x.pipeline },
              { head: "Queue", cell: (x) => x.queue },
              { head: "Pending", class: "num", cell: (x) => x.pending },
              { head: "All", class: "num", cell: (x) => x.total },
            ]}
          />
        )}
      </section>

      <QueueBacklogs queues={queues} />

      {!alerts && (
        <p class="small muted" role="note">
          Alerts, scheduled jobs, queue backlogs and the provider's circuit breaker are {EVERY_NOTE}.
        </p>
      )}

      {alerts && (
      <section aria-labelledby="h-alerts">
        <h2 id="h-alerts">Alerts {firing.length ? <span class="badge bad">{firing.length} firing</span> : <span class="badge ok">none firing</span>}</h2>
        <p class="small">
          <a href={href("/alerts")}>Events and their deliveries</a>: what was sent to each channel, what failed, and the channels.
        </p>
        {firing.length > 0 && (
          <ul class="alerts">
            {firing.map((a) => (
              <li key={a.name}>
                <strong>{a.name}</strong> since <Time ms={a.since} />
                {a.detail && (
                  <span class="muted">
                    {" "}
                    — <Stamped text={a.detail} />
                  </span>
                )}
              </li>
            ))}
          </ul>
        )}
      </section>
      )}

      {breaker && <BreakerPanel breaker={breaker} onDone={() => refresh(true)} />}

      <section aria-labelledby="h-time">
        <h2 id="h-time">Failures over time</h2>
        <div class="charts">
          <BarChart title="Last 24 hours, by hour" points={last24} unit="failures" step={3600} />
          <BarChart title="Last 7 days, by day" points={week} unit="failures" step={86400} />
        </div>
      </section>

      <div class="two">
        <section aria-labelledby="h-reasons">
          <h2 id="h-reasons">Top failure reasons (pending)</h2>
          <Bars
            label="Top failure reasons"
            items={stats.top_failure_reasons.map((r) => ({ label: r.failure_reason ?? "(none)", count: r.count, q: r.failure_reason }))}
            link={(it) => (it.q && it.q.length <= 200 ? href("/failures", { status: "pending", q: it.q }) : null)}
          />
        </section>
        <section aria-labelledby="h-brewers">
          <h2 id="h-brewers">Top failing brewers (pending)</h2>
          <Bars
            label="Top failing brewers"
            items={stats.top_failing_brewers.map((b) => ({ label: b.brewer, count: b.count }))}
            link={(it) => (it.label.length <= 200 ? href("/failures", { status: "pending", q: it.label }) : null)}
          />
        </section>
      </div>

      {jobs && (
      <section aria-labelledby="h-jobs">
        <h2 id="h-jobs">Scheduled jobs</h2>
        <Table
          label="Last run of each job"
          empty="No job has run yet."
          rows={jobs.jobs}
          rowKey={(j) => j.job}
          columns={[
            { head: "Job", rowHeader: true, cell: (j) => j.job },
            { head: "Last run", cell: (j) => <Time ms={j.last_run_at} /> },
            {
              head: "Outcome",
              cell: (j) => (
                <>
                  {j.last_ok ? <span class="badge ok">ok</span> : <span class="badge bad">failed</span>}
                  {j.last_error && <span class="muted small"> {j.last_error}</span>}
                </>
              ),
            },
            { head: "Took", class: "num", cell: (j) => `${j.last_duration_ms} ms` },
            { head: "Runs", class: "num", cell: (j) => j.runs },
            { head: "Failed", class: "num", cell: (j) => j.failures },
          ]}
        />
      </section>
      )}
    </div>
  );
}

// BREAKER names the breaker's states as the panel says them.
const BREAKER = { closed: "closed", open: "open", half_open: "half-open" };

// BreakerState says what the provider's circuit breaker is doing (GET
// /admin/enrichment/breaker): its state, since when, why, and when the
// next probe goes.
function BreakerState({ b }) {
  const since = b.since ? (
    <>
      {" "}
      since <Time ms={b.since} />
    </>
  ) : null;
  if (b.state === "closed")
    return (
      <p class="breaker-state">
        {b.since ? <>Closed{since}</> : "Closed (it has never opened)"}: provider calls go through.
        {b.failures > 0 ? ` ${b.failures} transient failure${b.failures === 1 ? "" : "s"} in a row counted so far.` : ""}
      </p>
    );
  const why =
    b.cause === "auth"
      ? "because the provider refused the API key (401/403): fix ENRICHMENT_API_KEY, then close it"
      : `after ${b.failures} consecutive transient failure${b.failures === 1 ? "" : "s"}`;
  const reopens = b.reopens ? ` ${b.reopens} probe${b.reopens === 1 ? "" : "s"} in a row failed.` : "";
  if (b.state === "half_open")
    return (
      <p class="breaker-state">
        Half-open{since}, opened {why}: one probe call decides{b.probe_until ? <>, its lease ends <Time ms={b.probe_until} /></> : null}.{reopens}
      </p>
    );
  return (
    <p class="breaker-state">
      Open{since}, {why}. Provider calls wait in D1.{" "}
      {b.probe_due ? (
        <>
          Its cooldown ended <Time ms={b.open_until} />: the next catch-up run probes the provider.
        </>
      ) : (
        <>
          Next probe at <Time ms={b.open_until} />.
        </>
      )}
      {reopens}
    </p>
  );
}

// BreakerPanel shows the enrichment provider's circuit breaker and, when
// it is not closed, closes it (POST /admin/enrichment/breaker/reset,
// audited) after a confirmation: for when a fixed key or a single bad beer
// leaves the pipeline waiting.
function BreakerPanel({ breaker, onDone }) {
  const [phase, setPhase] = useState("idle"); // idle | confirm | running | done
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const closed = breaker.state === "closed";
  const run = async () => {
    setPhase("running");
    try {
      setResult(await post("/admin/enrichment/breaker/reset"));
      setError(null);
      setPhase("done");
      onDone();
    } catch (e) {
      setError(e);
      setPhase("idle");
    }
  };
  return (
    <section aria-labelledby="h-breaker">
      <h2 id="h-breaker">
        Provider circuit breaker <span class={"badge " + (closed ? "ok" : "bad")}>{BREAKER[breaker.state] ?? breaker.state}</span>
      </h2>
      <BreakerState b={breaker} />
      {!closed && (
        <p class="small muted">
          While the breaker is open, beers wait in D1 and one probe at a time checks the provider. Close it by hand after fixing
          the API key, or when one bad beer keeps reopening it; the waiting beers go back to the queue on the catch-up's next run.
        </p>
      )}
      <ErrorBox error={error} />
      {!closed && phase === "idle" && (
        <button type="button" disabled={!can("breaker")} aria-describedby={can("breaker") ? undefined : "breaker-needs"} onClick={() => setPhase("confirm")}>
          Close the breaker…
        </button>
      )}
      {!closed && <Needs id="breaker-needs" items={[["Closing the breaker", "breaker"]]} />}
      {phase === "confirm" && (
        <p role="alertdialog" aria-label="Confirm closing the breaker">
          Close the provider's circuit breaker now? This is audited.{" "}
          <button type="button" onClick={run}>
            Yes, close it
          </button>{" "}
          <button type="button" class="link" onClick={() => setPhase("idle")}>
            Cancel
          </button>
        </p>
      )}
      {phase === "running" && <p aria-busy="true">Closing…</p>}
      {phase === "done" && result && (
        <p role="status">
          Breaker closed (it was {result.previous_state}).{" "}
          <button type="button" class="link" onClick={() => setPhase("idle")}>
            OK
          </button>
        </p>
      )}
    </section>
  );
}

function Card({ label, value, link, strong }) {
  const body = (
    <>
      <span class="card-value">{value}</span>
      <span class="card-label">{label}</span>
    </>
  );
  return <li class={"card" + (strong ? " strong" : "")}>{link ? <a href={link}>{body}</a> : body}</li>;
}

// Stamped shows an alert's text with its times (the API writes them as UTC
// ISO 8601 stamps) in the form every other time on the page takes.
const STAMP = /\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b/g;
export function Stamped({ text }) {
  const out = [];
  let at = 0;
  for (const m of text.matchAll(STAMP)) {
    out.push(text.slice(at, m.index), <Time key={m.index} ms={Date.parse(m[0])} />);
    at = m.index + m[0].length;
  }
  out.push(text.slice(at));
  return <>{out}</>;
}
