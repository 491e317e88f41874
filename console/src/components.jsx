import { useEffect, useRef, useState } from "preact/hooks";
import { can, me } from "./state.js";
import { format, iso, utc } from "./time.js";

// Time shows ms in the viewer's zone (or UTC, per the header's switch), the
// other form in its title and as the machine-readable datetime. It keeps no
// state of its own: the switch re-renders the whole console (App uses the
// signal), and a list of 50 rows needs no 50 subscriptions.
export function Time({ ms }) {
  const inUtc = utc.value;
  if (ms === null || ms === undefined) return <span>—</span>;
  return (
    <time dateTime={iso(ms)} title={format(ms, !inUtc)}>
      {format(ms, inUtc)}
    </time>
  );
}

// ErrorBox shows an API error where it happened. A 403 is what this
// sign-in may not do (its message names the missing permission, or the
// pipelines the key is limited to): the tab stays signed in.
export function ErrorBox({ error }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error.status === 403 ? <strong>Not allowed: </strong> : error.code ? <strong>{error.code}: </strong> : null}
      {error.message}
    </p>
  );
}

// Needs says, next to actions the principal may not take, why: items are
// [label, permission] pairs; each missing permission gets one sentence
// naming its actions, then the role. Nothing when every one is allowed.
// The disabled buttons point at it with aria-describedby={id}.
export function Needs({ id, items }) {
  const m = me.value;
  const missing = new Map();
  for (const [label, p] of items) {
    if (can(p)) continue;
    if (!missing.has(p)) missing.set(p, []);
    missing.get(p).push(label);
  }
  if (!missing.size) return null;
  return (
    <p class="needs small" id={id}>
      {[...missing].map(([p, labels]) => `${labels.join(", ")}: needs the ${p} permission. `)}
      Your role is {m?.role ?? "unknown"}.
    </p>
  );
}

// Table is the console's one table of rows. It sits in a labelled,
// focusable region that scrolls sideways when the table does not fit (so
// keyboard users can scroll it too); below 600 px wide each row becomes a
// card (see app.css), each cell labelled with its column's header
// (data-label).
//
// columns: one { head, label, class, headClass, cellClass, rowHeader,
// cell } per column. head is the header's content; label the cell's
// data-label (by default head, when that is text; none for a column
// without a text header); class goes on both the header and the cells,
// headClass on the header only, cellClass on the cells only (a string, or a
// function of the row); rowHeader makes the cells <th scope="row">;
// cell(row, i) is a cell's content.
// rows, rowKey(row, i) and rowClass(row) give the body; empty, when given,
// is the one row shown when there are no rows (and busy is not true);
// busy, when given, is the table's aria-busy; caption is a visible
// caption, srCaption one for screen readers only.
export function Table({ label, class: cls, caption, srCaption, busy, columns, rows, rowKey, rowClass, empty }) {
  return (
    <div class="scroll" role="region" aria-label={label} tabIndex={0}>
      <table class={cls} aria-busy={busy === undefined ? undefined : busy ? "true" : "false"}>
        {caption && <caption>{caption}</caption>}
        {srCaption && <caption class="sr-only">{srCaption}</caption>}
        <thead>
          <tr>
            {columns.map((c, n) => (
              <th key={n} scope="col" class={join(c.class, c.headClass)}>
                {c.head}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {empty && !busy && rows.length === 0 && (
            <tr>
              <td colSpan={columns.length} class="muted">
                {empty}
              </td>
            </tr>
          )}
          {rows.map((row, i) => (
            <tr key={rowKey(row, i)} class={rowClass?.(row)}>
              {columns.map((c, n) => {
                const Cell = c.rowHeader ? "th" : "td";
                const cellClass = typeof c.cellClass === "function" ? c.cellClass(row) : c.cellClass;
                return (
                  <Cell key={n} scope={c.rowHeader ? "row" : undefined} class={join(c.class, cellClass)} data-label={labelOf(c)}>
                    {c.cell(row, i)}
                  </Cell>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function labelOf(c) {
  if (c.label !== undefined) return c.label || undefined;
  return typeof c.head === "string" ? c.head : undefined;
}

function join(...classes) {
  return classes.filter(Boolean).join(" ") || undefined;
}

// useCursors keeps the cursor pages of a list: pages[i] is the cursor of
// page i (null for the first). A new key (another filter or page size)
// starts again at the first page.
export function useCursors(key) {
  const [nav, setNav] = useState({ key, cursors: [null] });
  const cursors = nav.key === key ? nav.cursors : [null];
  const set = (c) => setNav({ key, cursors: c });
  const page = cursors.length - 1;
  return {
    page,
    cursor: cursors[page] ?? undefined,
    // deps for useLoad: a reset to the first page loads again
    deps: [key, page, cursors[page], nav],
    first: () => set([null]),
    previous: () => set(cursors.slice(0, -1)),
    next: (cursor) => set([...cursors, cursor]),
  };
}

// useInSteps returns rows a step at a time: the first `first` at once, then
// `step` more in each following task, until all show (a new rows starts
// again). Fifty rows of ten cells in one render were one long task of the
// failures page (on a slow phone, a few hundred ms the page did not answer
// input); in steps, the first screen shows sooner and no task is long.
// done is true once every row shows: what sits below the list (its pager)
// waits for it, so that it never moves down.
export function useInSteps(rows, first = 10, step = 10) {
  const [state, setState] = useState({ rows, n: first });
  const n = state.rows === rows ? state.n : first;
  useEffect(() => {
    if (n >= rows.length) return;
    const t = setTimeout(() => setState({ rows, n: n + step }), 0);
    return () => clearTimeout(t);
  }, [rows, n]);
  return { rows: n >= rows.length ? rows : rows.slice(0, n), done: n >= rows.length };
}

// Pager moves through a list's cursor pages (see useCursors); it shows
// once the first page has come (data: its answer, with has_more and
// next_cursor), so it never moves down as the table loads. previous adds a
// "Previous page" button.
export function Pager({ pages, data, previous }) {
  if (!data) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={pages.page === 0} onClick={pages.first}>
        First page
      </button>
      {previous && (
        <button type="button" disabled={pages.page === 0} onClick={pages.previous}>
          Previous page
        </button>
      )}
      <span>Page {pages.page + 1}</span>
      <button type="button" disabled={!data.has_more} onClick={() => pages.next(data.next_cursor)}>
        Next page
      </button>
    </nav>
  );
}

// Bars is a horizontal bar list (top reasons, top brewers): label, count,
// and a bar whose length is relative to the largest. The bar is decoration;
// the numbers are text.
export function Bars({ items, label, link }) {
  if (!items.length) return <p class="muted">None pending.</p>;
  const max = Math.max(...items.map((i) => i.count), 1);
  return (
    <ul class="bars" aria-label={label}>
      {items.map((it, n) => (
        <li key={n}>
          <span class="bar-label">{link ? <a href={link(it)}>{it.label}</a> : it.label}</span>
          <span class="bar-count">{it.count}</span>
          <span class="bar" aria-hidden="true">
            <span class="bar-fill" style={{ width: `${(100 * it.count) / max}%` }} />
          </span>
        </li>
      ))}
    </ul>
  );
}

// Dialog is a modal <dialog>: focus moves into it, Escape closes it.
export function Dialog({ title, onClose, children }) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    d.showModal();
    const cancel = (e) => {
      e.preventDefault();
      onClose();
    };
    d.addEventListener("cancel", cancel);
    return () => {
      d.removeEventListener("cancel", cancel);
      if (d.open) d.close();
    };
  }, []);
  return (
    <dialog ref={ref} aria-labelledby="dialog-title" class="dialog">
      <h2 id="dialog-title">{title}</h2>
      {children}
    </dialog>
  );
}

// useLoad runs load() when deps change and keeps its data, error and state.
// Until the load for the current deps has answered, loading is true (also
// in the render right after deps change, before the effect has started it).
export function useLoad(load, deps) {
  const key = JSON.stringify(deps);
  const [state, setState] = useState({ loading: true, data: null, error: null, key: null });
  const seq = useRef(0);
  const run = () => {
    const n = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => n === seq.current && setState({ loading: false, data, error: null, key }),
      (error) => n === seq.current && setState({ loading: false, data: null, error, key }),
    );
  };
  useEffect(run, [key]);
  return [{ ...state, loading: state.loading || state.key !== key }, run];
}

// Copy copies text to the clipboard and says so.
export function Copy({ text, label }) {
  const [done, setDone] = useState("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone("Copied.");
    } catch {
      setDone("Copy failed: select the text and copy it by hand.");
    }
  };
  return (
    <span>
      <button type="button" onClick={copy}>
        {label}
      </button>{" "}
      <span role="status" class="muted">
        {done}
      </span>
    </span>
  );
}

export function Pre({ text, label }) {
  return (
    <pre class="payload" tabIndex={0} aria-label={label}>
      {text}
    </pre>
  );
}
