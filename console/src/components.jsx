import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { format, iso, utc } from "./time.js";
import { useSignal } from "./state.js";

// Time shows ms in the viewer's zone (or UTC, per the header's switch), the
// other form in its title and as the machine-readable datetime.
export function Time({ ms }) {
  const inUtc = useSignal(utc);
  if (ms === null || ms === undefined) return <span>—</span>;
  return (
    <time dateTime={iso(ms)} title={format(ms, !inUtc)}>
      {format(ms, inUtc)}
    </time>
  );
}

export function ErrorBox({ error }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error.code ? <strong>{error.code}: </strong> : null}
      {error.message}
    </p>
  );
}

// Scroll holds a table: below 600 px wide each row becomes a card (see
// app.css), each cell labelled with its column's header (data-label, set
// here after every render from the table's <thead>); wider, a table that
// does not fit scrolls sideways (a focusable, labelled region, so keyboard
// users can scroll it too).
export function Scroll({ label, children }) {
  const ref = useRef(null);
  useLayoutEffect(() => labelCells(ref.current));
  return (
    <div class="scroll" role="region" aria-label={label} tabIndex={0} ref={ref}>
      {children}
    </div>
  );
}

// labelCells sets each body cell's data-label to its column's header text
// (cells spanning columns get none).
function labelCells(box) {
  for (const table of box.querySelectorAll("table")) {
    const heads = [...(table.tHead?.rows[0]?.cells ?? [])].map((th) => th.textContent.trim());
    for (const body of table.tBodies) {
      for (const row of body.rows) {
        [...row.cells].forEach((cell, i) => {
          const l = cell.colSpan === 1 ? heads[i] : "";
          if (l) {
            if (cell.dataset.label !== l) cell.dataset.label = l;
          } else if (cell.dataset.label !== undefined) delete cell.dataset.label;
        });
      }
    }
  }
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
