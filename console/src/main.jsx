import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import css from "./app.css";
import { adopt } from "./style.js";
import { get, signedIn, signOut, whenSignedOut } from "./api.js";
import { Audit } from "./audit.jsx";
import { Tasks } from "./tasks.jsx";
import { Detail } from "./detail.jsx";
import { Failures } from "./failures.jsx";
import { Groups } from "./groups.jsx";
import { Overview } from "./overview.jsx";
import { href, pipeline, route, selectPipeline } from "./router.js";
import { SignIn } from "./signin.jsx";
import { pipelines, useSignal } from "./state.js";
import { utc, zone } from "./time.js";

adopt(css);

const PAGES = [
  ["/", "Overview"],
  ["/failures", "Failures"],
  ["/groups", "Groups"],
  ["/tasks", "Replay tasks"],
  ["/audit", "Audit log"],
];

function page(path, params) {
  const m = /^\/failures\/([^/]+)$/.exec(path);
  if (m) return { title: `Failure #${m[1]}`, body: <Detail id={m[1]} />, nav: "/failures" };
  switch (path) {
    case "/failures":
      return { title: "Failures", body: <Failures params={params} />, nav: path };
    case "/groups":
      return { title: "Failure groups", body: <Groups params={params} />, nav: path };
    case "/tasks":
      return { title: "Replay tasks", body: <Tasks />, nav: path };
    case "/audit":
      return { title: "Audit log", body: <Audit params={params} />, nav: path };
    case "/":
      return { title: "Overview", body: <Overview />, nav: path };
  }
  return { title: "Not found", body: <p>No such page. <a href="#/">Overview</a></p>, nav: "" };
}

// loadPipelines reads the configured pipelines' names (see state.js); a
// failed read leaves the selector out rather than the page waiting.
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
// Signed in already (a reload): ask now, alongside the page's own calls.
if (signedIn()) loadPipelines();

function App() {
  const [authed, setAuthed] = useState(signedIn());
  const [message, setMessage] = useState("");
  const r = useSignal(route);
  const inUtc = useSignal(utc);
  const heading = useRef(null);
  const chosen = useSignal(pipeline);
  const names = useSignal(pipelines);
  useEffect(() => {
    if (authed) loadPipelines();
  }, [authed]);
  useEffect(() => {
    whenSignedOut((msg) => {
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
        message={message}
        onSignedIn={() => {
          setMessage("");
          setAuthed(true);
        }}
      />
    );
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), heading.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <span class="brand">redrive</span>
        <nav aria-label="Console">
          {PAGES.map(([path, label]) => (
            <a key={path} href={href(path)} aria-current={p.nav === path ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        {/* Until the names are known, an invisible selector keeps its place. */}
        {(names === null || names.length > 1 || chosen) && (
          <label class={names === null && !chosen ? "pipeline pending" : "pipeline"}>
            Pipeline
            <select name="pipeline" value={chosen} disabled={names === null && !chosen} onChange={(e) => selectPipeline(e.currentTarget.value)}>
              <option value="">All pipelines</option>
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
        <button
          type="button"
          class="link"
          onClick={() => {
            signOut();
            setMessage("Signed out.");
            setAuthed(false);
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main">
        <h1 tabIndex={-1} ref={heading}>
          {p.title}
        </h1>
        {p.body}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app"));
