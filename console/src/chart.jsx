import { useEffect, useRef } from "preact/hooks";
import { day, format, utc } from "./time.js";
import { useSignal } from "./state.js";

const HEIGHT = 170;
const FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif';
// Whole numbers of failures only.
const STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6];

// draw paints points as bars on canvas, as wide as its box: a count axis
// with grid lines on the left, each bucket's start below (as many as fit).
// A chart of a few dozen bars needs no charting library: this is the
// whole of it, and no page pays for loading and running one.
// The canvas's box is app.css's (its box's width, HEIGHT px tall): draw
// sets only its bitmap, so drawing never moves anything on the page.
function draw(canvas, width, points, step, inUtc) {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(HEIGHT * dpr);
  const g = canvas.getContext("2d");
  g.scale(dpr, dpr);
  g.font = FONT;
  const max = Math.max(4, Math.ceil(Math.max(0, ...points.map((p) => p.count)) * 1.1));
  const tick = STEPS.find((s) => max / s <= 5) ?? STEPS[STEPS.length - 1];
  const left = 8 + g.measureText(String(Math.floor(max / tick) * tick)).width + 6;
  const top = 8, bottom = HEIGHT - 22, right = width - 8;
  const y = (v) => bottom - ((bottom - top) * v) / max;
  // the count axis and its grid
  g.textAlign = "right";
  g.textBaseline = "middle";
  for (let v = 0; v <= max; v += tick) {
    g.fillStyle = "#eaeef2";
    g.fillRect(left, Math.round(y(v)), right - left, 1);
    g.fillStyle = "#57606a";
    g.fillText(String(v), left - 6, y(v));
  }
  // the bars, each in its bucket's slot
  const slot = (right - left) / points.length;
  const bar = Math.min(slot * 0.85, 60);
  g.fillStyle = "rgba(179,38,30,0.55)";
  points.forEach((p, i) => {
    if (p.count > 0) g.fillRect(left + i * slot + (slot - bar) / 2, y(p.count), bar, bottom - y(p.count));
  });
  // the buckets' starts: an hour of the day, or a day
  const label = (ms) => (step < 86400 ? clock(ms, inUtc) : day(ms, inUtc).slice(5));
  const every = Math.max(1, Math.ceil((g.measureText(label(points[0].start)).width + 10) / slot));
  g.textAlign = "center";
  g.textBaseline = "top";
  g.fillStyle = "#57606a";
  for (let i = 0; i < points.length; i += every) g.fillText(label(points[i].start), left + (i + 0.5) * slot, bottom + 6);
}

// clock writes ms as its hour and minute ("17:00").
function clock(ms, inUtc) {
  const d = new Date(ms);
  const [h, m] = inUtc ? [d.getUTCHours(), d.getUTCMinutes()] : [d.getHours(), d.getMinutes()];
  return String(h).padStart(2, "0") + ":" + String(m).padStart(2, "0");
}

// BarChart draws counts per time bucket (step seconds long) on a canvas.
// points are {start (ms), count, label}; a table of the same numbers
// follows it for screen readers and keyboard users.
export function BarChart({ title, points, unit, step }) {
  const canvas = useRef(null);
  const inUtc = useSignal(utc);
  // A ResizeObserver gives the box's width once layout has it (the first
  // time, and whenever it changes): reading clientWidth here instead would
  // force a layout of the page in the middle of rendering it.
  useEffect(() => {
    const c = canvas.current;
    const ro = new ResizeObserver(([e]) => {
      const width = Math.floor(e.contentRect.width);
      if (points.length && width > 0 && width !== c.drawn) draw(c, (c.drawn = width), points, step, inUtc);
    });
    c.drawn = 0;
    ro.observe(c);
    return () => ro.disconnect();
  }, [points, inUtc]);
  const total = points.reduce((s, p) => s + p.count, 0);
  return (
    <figure class="chart">
      <figcaption>
        {title}: <strong>{total}</strong> {unit}
      </figcaption>
      <div class="chart-box" aria-hidden="true">
        <canvas ref={canvas} />
      </div>
      <details>
        <summary>Numbers</summary>
        <table>
          <caption class="sr-only">{title}</caption>
          <thead>
            <tr>
              <th scope="col">From</th>
              <th scope="col">Failures</th>
            </tr>
          </thead>
          <tbody>
            {points.map((p) => (
              <tr key={p.start}>
                <td>{p.label || format(p.start, inUtc)}</td>
                <td class="num">{p.count}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

// daily groups hourly buckets into the last n days (midnight to midnight in
// the zone shown), today last.
export function daily(hourly, n, inUtc) {
  const now = new Date();
  const midnight = (d) => (inUtc ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) : new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime());
  const days = [];
  let start = midnight(now);
  for (let i = 0; i < n; i++) {
    days.unshift({ start, count: 0 });
    // the previous midnight (days are not always 24 h long in a local zone)
    start = midnight(new Date(start - 12 * 3600e3));
  }
  for (const b of hourly) {
    for (let i = days.length - 1; i >= 0; i--) {
      if (b.start >= days[i].start) {
        days[i].count += b.failures;
        break;
      }
    }
  }
  return days.map((d) => ({ ...d, label: day(d.start, inUtc) }));
}
