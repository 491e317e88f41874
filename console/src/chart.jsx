import { useEffect, useRef } from "preact/hooks";
import { adopt } from "./style.js";
import { day, format, utc } from "./time.js";
import { useSignal } from "./state.js";

// loadPlot loads uPlot once (its own chunk: pages without charts do not
// load it).
let plotModule = null;
const loadPlot = () =>
  (plotModule ??= import("./uplot.js").then((m) => {
    adopt(m.css);
    return m.uPlot;
  }));

// BarChart draws counts per time bucket with uPlot. points are
// {start (ms), count, label}; a table of the same numbers follows it for
// screen readers and keyboard users.
export function BarChart({ title, points, unit, step }) {
  const box = useRef(null);
  const inUtc = useSignal(utc);
  useEffect(() => {
    const el = box.current;
    let plot = null;
    let uPlot = null;
    let gone = false;
    const draw = () => {
      if (gone || !uPlot) return;
      plot?.destroy();
      const width = Math.max(240, el.clientWidth);
      plot = new uPlot(
        {
          width,
          height: 170,
          legend: { show: false },
          cursor: { drag: { x: false, y: false }, points: { show: false } },
          tzDate: inUtc ? (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC") : undefined,
          // Each bar starts at its bucket's start and is one bucket wide:
          // the x range ends one bucket after the last start.
          scales: {
            x: { time: true, range: () => [points[0].start / 1000, points[points.length - 1].start / 1000 + step] },
            y: { range: (u, min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] },
          },
          axes: [
            { stroke: "#57606a", grid: { show: false }, size: 48 },
            // whole numbers of failures only
            { stroke: "#57606a", grid: { stroke: "#eaeef2" }, size: 40, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5] },
          ],
          series: [
            {},
            {
              label: "failures",
              stroke: "#b3261e",
              fill: "rgba(179,38,30,0.55)",
              width: 0,
              paths: uPlot.paths.bars({ size: [0.85, 60], align: 1 }),
              points: { show: false },
            },
          ],
        },
        [points.map((p) => p.start / 1000), points.map((p) => p.count)],
        el,
      );
    };
    // uPlot (and the first Intl call of the page, in its module: ICU's
    // data, hundreds of ms on a slow phone) loads when the chart nears the
    // screen: on a phone the charts are far below the first screen.
    const seen = new IntersectionObserver(
      (entries) => {
        if (!entries.some((e) => e.isIntersecting)) return;
        seen.disconnect();
        loadPlot().then((m) => {
          uPlot = m;
          draw();
        });
      },
      { rootMargin: "200px" },
    );
    seen.observe(el);
    let t = 0;
    const resize = () => {
      clearTimeout(t);
      t = setTimeout(draw, 150);
    };
    window.addEventListener("resize", resize);
    return () => {
      gone = true;
      seen.disconnect();
      window.removeEventListener("resize", resize);
      clearTimeout(t);
      plot?.destroy();
    };
  }, [points, inUtc]);
  const total = points.reduce((s, p) => s + p.count, 0);
  return (
    <figure class="chart">
      <figcaption>
        {title}: <strong>{total}</strong> {unit}
      </figcaption>
      <div ref={box} class="chart-box" aria-hidden="true" />
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
