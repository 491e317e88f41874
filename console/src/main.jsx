import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import css from "./app.css";
import { adopt } from "./style.js";
import { get, mode, probeAccess, signedIn, signOut, whenSignedOut } from "./api.js";
import { Alerts } from "./alerts.jsx";
import { Audit } from "./audit.jsx";
import { Tasks } from "./tasks.jsx";
import { Detail } from "./detail.jsx";
import { Failures } from "./failures.jsx";
import { Groups } from "./groups.jsx";
import { Keys } from "./keys.jsx";
import { Overview } from "./overview.jsx";
import { href, pipeline, route, selectPipeline } from "./router.js";
import { SignIn } from "./signin.jsx";
import { can, me, needs, pipelines, scoped, useSignal } from "./state.js";
import { utc, zone } from "./time.js";

adopt(css);

// [path, label, shown (default: always), the label on a narrow screen]
const PAGES = [
  ["/", "Overview"],
  ["/failures", "Failures"],
  ["/groups", "Groups"],
  ["/tasks", "Replay tasks", null, "Tasks"],
  ["/audit", "Audit log", null, "Audit"],
  ["/keys", "Keys", () => can("keys") && !scoped()],
];

function page(path, params) {
  const m = /^\/failures\/([^/]+)$/.exec(path);
  if (m) {
    const title = `Failure #${m[1]}`;
    // The detail shows the row's body: a role without read_body is told
    // so, rather than shown a page that fails.
    if (!can("read_body"))
      return {
        title,
        nav: "/failures",
        body: (
          <p class="needs" role="note">
            A failure's detail page shows its body: {needs("read_body")} The <a href={href("/failures")}>failures list</a> shows its fields.
          </p>
        ),
      };
    return { title, body: <Detail id={m[1]} />, nav: "/failures" };
  }
  switch (path) {
    case "/failures":
      return { title: "Failures", body: <Failures params={params} />, nav: path };
    case "/groups":
      return { title: "Failure groups", body: <Groups params={params} />, nav: path };
    case "/tasks":
      return { title: "Replay tasks", body: <Tasks />, nav: path };
    case "/alerts":
      // Reached from the overview's Alerts (the header has no room for a
      // seventh page on a phone).
      return { title: "Alert events", body: <Alerts params={params} />, nav: "/" };
    case "/audit":
      return { title: "Audit log", body: <Audit params={params} />, nav: path };
    case "/keys":
      return { title: "API keys", body: <Keys />, nav: path };
    case "/":
      return { title: "Overview", body: <Overview />, nav: path };
  }
  return { title: "Not found", body: <p>No such page. <a href="#/">Overview</a></p>, nav: "" };
}

// loadPipelines reads the configured pipelines' names (see state.js; a key
// limited to pipelines gets its own only); a failed read leaves the
// selector out rather than the page waiting.
let asked = null;
function loadPipelines() {
  asked ??= get("/admin/pipelines").then(
    (d) => (pipelines.value = d.pipelines.map((x) => x.name)),
    () => {
      asked = null;
      if (pipelines.value === null) pipelines.value = [];
    },
  );
}

// loadMe asks who this tab is signed in as (GET /admin/whoami), at every
// load: the stored answer may be stale. A 401 signs the tab out (api.js).
let askedMe = null;
function loadMe() {
  askedMe ??= get("/admin/whoami").then(
    (d) => (me.value = d),
    () => (askedMe = null),
  );
}

// forget drops what the last sign-in read: another may see other pipelines.
function forget() {
  me.value = null;
  pipelines.value = null;
  // The next principal starts from every pipeline (or its own), not from
  // the pipeline this one had selected.
  if (pipeline.value) selectPipeline("", true);
  asked = askedMe = null;
}

// A principal limited to pipelines reads and acts on its pipelines only:
// one of them is always selected (a read naming none is refused when it
// has several, a bulk action naming none always: PIPELINE_REQUIRED).
function applyScope(m) {
  const ps = m?.pipelines;
  if (!Array.isArray(ps)) return;
  const want = ps.includes(pipeline.value) ? pipeline.value : (ps[0] ?? "");
  if (want !== pipeline.value) selectPipeline(want, true);
}
me.subscribe(applyScope);
applyScope(me.value);

// Signed in already (a reload): ask now, alongside the page's own calls.
// Otherwise, maybe Cloudflare Access signed the browser in.
const probe = signedIn() ? null : probeAccess();
if (signedIn()) {
  loadPipelines();
  loadMe();
}

function App() {
  const [authed, setAuthed] = useState(signedIn());
  const [probing, setProbing] = useState(!!probe);
  const [message, setMessage] = useState("");
  const r = useSignal(route);
  const inUtc = useSignal(utc);
  const heading = useRef(null);
  const chosen = useSignal(pipeline);
  const names = useSignal(pipelines);
  const who = useSignal(me);
  useEffect(() => {
    probe?.then((d) => {
      if (d) {
        me.value = d;
        setAuthed(true);
      }
      setProbing(false);
    });
  }, []);
  useEffect(() => {
    if (authed) {
      loadPipelines();
      loadMe();
    }
  }, [authed]);
  useEffect(() => {
    whenSignedOut((msg) => {
      forget();
      setMessage(msg + " Sign in again.");
      setAuthed(false);
    });
  }, []);
  const p = page(r.path, r.params);
  useEffect(() => {
    document.title = `${p.title} · redrive`;
    heading.current?.focus({ preventScroll: true });
  }, [r.path, authed]);
  if (!authed)
    return (
      <SignIn
        probing={probing}
        message={message}
        onSignedIn={() => {
          setMessage("");
          setAuthed(true);
        }}
      />
    );
  const limited = Array.isArray(who?.pipelines);
  const access = mode() === "access";
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), heading.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <span class="brand">redrive</span>
        <nav aria-label="Console">
          {PAGES.filter(([, , show]) => !show || show()).map(([path, label, , short]) => (
            <a key={path} href={href(path)} aria-current={p.nav === path ? "page" : undefined}>
              {short ? (
                <>
                  <span class="long">{label}</span>
                  <span class="short" aria-hidden="true">
                    {short}
                  </span>
                </>
              ) : (
                label
              )}
            </a>
          ))}
        </nav>
        {/* Until the names are known, an invisible selector keeps its place. */}
        {(names === null || names.length > 1 || (chosen && !limited)) && (
          <label class={names === null && !chosen ? "pipeline pending" : "pipeline"}>
            <span class="label-text">Pipeline</span>
            <select name="pipeline" value={chosen} disabled={names === null && !chosen} onChange={(e) => selectPipeline(e.currentTarget.value)}>
              {!limited && <option value="">All pipelines</option>}
              {(names ?? []).map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
              {chosen && !names?.includes(chosen) && <option value={chosen}>{chosen}</option>}
            </select>
          </label>
        )}
        <label class="utc">
          <input type="checkbox" checked={inUtc} onChange={(e) => (utc.value = e.currentTarget.checked)} /> UTC times
          <span class="sr-only"> (otherwise {zone})</span>
        </label>
        {who && (
          <span class="who" id="who">
            {access ? "Signed in through Cloudflare Access as " : ""}
            <strong>{who.principal}</strong> ({who.role}){limited ? `, limited to ${who.pipelines.join(", ")}` : ""}
          </span>
        )}
        {access ? (
          // Access keeps the sign-in in its own cookie: its logout ends it.
          <a class="signout" href="/cdn-cgi/access/logout">
            Sign out
          </a>
        ) : (
          <button
            type="button"
            class="link"
            onClick={() => {
              signOut();
              forget();
              setMessage("Signed out.");
              setAuthed(false);
            }}
          >
            Sign out
          </button>
        )}
      </header>
      <main id="main">
        <h1 tabIndex={-1} ref={heading}>
          {p.title}
        </h1>
        {/* The pages show what the principal may do: they wait for it (kept for a reload). */}
        {who ? p.body : <p aria-busy="true">Loading…</p>}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app"));
