import { useState } from "preact/hooks";
import { get, post } from "./api.js";
import { ErrorBox, Needs, Table, Time, useLoad } from "./components.jsx";
import { navigate } from "./router.js";
import { can, EVERY_NOTE, scoped } from "./state.js";

const SEVERITY = { critical: "bad", error: "bad", warning: "warn", info: "" };
const DELIVERY = { sent: "ok", failed: "bad", pending: "warn", skipped: "" };

// Alerts lists the newest events redrive told on-call (GET
// /admin/alerts/events), each with its delivery to every channel, and the
// channels (ALERT_CHANNELS; never their URL or secret), with a way to
// enable one a 410 disabled. Events and channels are of every pipeline: a
// key limited to pipelines is told so instead.
export function Alerts({ params }) {
  if (scoped())
    return (
      <p class="small muted" role="note">
        Alert events and channels are every pipeline's view: they are {EVERY_NOTE}.
      </p>
    );
  return <EventsView params={params} />;
}

function EventsView({ params }) {
  const failed = params.failed === "true";
  const [state, reload] = useLoad(() => get("/admin/alerts/events", { limit: 50, failed: failed ? "true" : undefined }), [failed]);
  const [enabled, setEnabled] = useState(null);
  const [error, setError] = useState(null);
  const enable = async (name) => {
    setError(null);
    try {
      setEnabled(await post(`/admin/alerts/channels/${encodeURIComponent(name)}/enable`));
      reload();
    } catch (e) {
      setError(e);
    }
  };
  if (state.error?.status === 403)
    return (
      <>
        <ErrorBox error={state.error} />
        <p class="small muted" role="note">
          Alert events and channels are every pipeline's view.
        </p>
      </>
    );
  if (state.error) return <ErrorBox error={state.error} />;
  if (!state.data) return <p aria-busy="true">Loading…</p>;
  const d = state.data;
  return (
    <div>
      <p class="small muted">
        What redrive told on-call, newest first, and how each channel took it. A delivery is tried again with a growing delay;
        a channel that answers 410 Gone is disabled until enabled here.{" "}
        <button type="button" class="link" onClick={reload}>
          Refresh
        </button>
      </p>
      <p class="failed-count">
        {d.failed ? (
          <>
            <span class="badge bad">{d.failed >= 1000 ? "1,000 or more" : d.failed} failed</span> deliveries: their last attempt failed.
          </>
        ) : (
          <>
            <span class="badge ok">none failed</span> No delivery's last attempt failed.
          </>
        )}
      </p>
      <section aria-labelledby="h-channels">
        <h2 id="h-channels">Channels</h2>
        <ErrorBox error={error} />
        {enabled && (
          <p class="result" role="status">
            Channel <strong>{enabled.channel}</strong> {enabled.was_disabled ? "enabled again" : "was not disabled"}.
          </p>
        )}
        {d.channels.some((c) => c.disabled_at) && <Needs id="channels-needs" items={[["Enable", "breaker"]]} />}
        <Table
          label="Alert channels"
          class="channels"
          empty="No channel configured (ALERT_CHANNELS): events are only kept here."
          rows={d.channels}
          rowKey={(c) => c.name}
          columns={[
            { head: "Channel", rowHeader: true, cell: (c) => c.name },
            { head: "Type", cell: (c) => c.type },
            { head: "Events", cellClass: "small wrap", cell: (c) => (c.events.length ? c.events.join(", ") : "all") },
            { head: "Pipelines", cellClass: "small wrap", cell: (c) => (c.pipelines.length ? c.pipelines.join(", ") : "all") },
            { head: "Min severity", cell: (c) => c.min_severity || "—" },
            {
              head: "State",
              cellClass: "wrap",
              cell: (c) =>
                c.disabled_at ? (
                  <>
                    <span class="badge bad">disabled</span> <Time ms={c.disabled_at} />
                    {c.reason && <span class="small muted"> {c.reason}</span>}{" "}
                    <button type="button" disabled={!can("breaker")} aria-describedby={can("breaker") ? undefined : "channels-needs"} onClick={() => enable(c.name)}>
                      Enable
                    </button>
                  </>
                ) : (
                  <span class="badge ok">enabled</span>
                ),
            },
          ]}
        />
      </section>
      <section aria-labelledby="h-events">
        <h2 id="h-events">Events</h2>
        <label class="inline-check">
          <input type="checkbox" name="failed" checked={failed} onChange={(e) => navigate("/alerts", e.currentTarget.checked ? { failed: "true" } : {})} /> Only events
          with a failed delivery
        </label>
        <Table
          label="Alert events"
          class="rows events"
          srCaption="The newest 50 events, newest first, with their deliveries"
          busy={state.loading}
          empty={failed ? "No event has a failed delivery." : "No event yet."}
          rows={d.events}
          rowKey={(e) => e.event.id}
          columns={[
            { head: "When", cellClass: "nowrap", cell: (e) => <Time ms={e.created_at} /> },
            {
              head: "Event",
              cell: (e) => (
                <>
                  <code>{e.event.type}</code> <span class={"badge " + (SEVERITY[e.event.severity] ?? "")}>{e.event.severity}</span>
                  {e.event.pipeline && <span class="small muted"> {e.event.pipeline}</span>}
                </>
              ),
            },
            { head: "Summary", cellClass: "reason", cell: (e) => e.event.summary },
            {
              head: "Deliveries",
              cellClass: "deliveries",
              cell: (e) =>
                e.deliveries.length ? (
                  <ul class="deliveries">
                    {e.deliveries.map((x) => (
                      <li key={x.channel}>
                        <Delivery x={x} />
                      </li>
                    ))}
                  </ul>
                ) : (
                  <span class="muted">no channel takes it</span>
                ),
            },
          ]}
        />
      </section>
    </div>
  );
}

// Delivery says how one channel took an event: its state, attempts, the
// next attempt (pending) or when it ended, and the last error.
function Delivery({ x }) {
  const attempts = `${x.attempts} attempt${x.attempts === 1 ? "" : "s"}`;
  return (
    <>
      <strong>{x.channel}</strong> <span class={"badge " + (DELIVERY[x.state] ?? "")}>{x.state}</span> <span class="small">{attempts}</span>
      {x.state === "pending" && (
        <span class="small">
          , next <Time ms={x.next_at} />
        </span>
      )}
      {x.state !== "pending" && x.done_at && (
        <span class="small">
          , <Time ms={x.done_at} />
        </span>
      )}
      {(x.last_status || x.last_error) && (
        <span class="small muted delivery-error">
          {" "}
          — {x.last_status ? `HTTP ${x.last_status}` : ""}
          {x.last_status && x.last_error ? ": " : ""}
          {x.last_error ?? ""}
        </span>
      )}
    </>
  );
}
