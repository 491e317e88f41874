// Times: the viewer's zone by default, UTC when asked (the header's switch);
// the other one is always in the title.
import { signal } from "./state.js";

export const utc = signal(sessionStorage.getItem("redrive.utc") === "1");
utc.subscribe((v) => sessionStorage.setItem("redrive.utc", v ? "1" : "0"));

// Times are formatted here, in English like the rest of the console,
// rather than with Intl.DateTimeFormat: the first Intl call of a page loads
// ICU's locale and zone data, 40-60 ms of main thread on a desktop (four
// times that on Lighthouse's simulated phone), before a single time shows.
// Date's own getters know the viewer's zone and its offset.
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const pad = (n) => String(n).padStart(2, "0");

// offsetName names a local offset as "GMT+1", "GMT-5", "GMT+5:30" (UTC itself
// is "UTC").
function offsetName(d) {
  const off = -d.getTimezoneOffset();
  if (off === 0) return "UTC";
  const a = Math.abs(off);
  return `GMT${off < 0 ? "-" : "+"}${Math.floor(a / 60)}${a % 60 ? ":" + pad(a % 60) : ""}`;
}

// parts is a time's fields in the viewer's zone, or in UTC.
function parts(d, inUtc) {
  return inUtc
    ? { y: d.getUTCFullYear(), mo: d.getUTCMonth(), day: d.getUTCDate(), wd: d.getUTCDay(), h: d.getUTCHours(), mi: d.getUTCMinutes(), s: d.getUTCSeconds(), zone: "UTC" }
    : { y: d.getFullYear(), mo: d.getMonth(), day: d.getDate(), wd: d.getDay(), h: d.getHours(), mi: d.getMinutes(), s: d.getSeconds(), zone: offsetName(d) };
}

// zone names the viewer's time zone ("Eastern Standard Time", from Date's
// own text; its offset when that has none).
export const zone = /\(([^)]+)\)$/.exec(String(new Date()))?.[1] || offsetName(new Date());

// format writes ms as "Nov 26, 2026, 17:20:41 UTC" (or the viewer's zone:
// "Nov 26, 2026, 12:20:41 GMT-5").
export function format(ms, inUtc = utc.value) {
  if (ms === null || ms === undefined) return "—";
  const p = parts(new Date(ms), inUtc);
  return `${MONTHS[p.mo]} ${p.day}, ${p.y}, ${pad(p.h)}:${pad(p.mi)}:${pad(p.s)} ${p.zone}`;
}

// day writes ms as its day: "Thu, Nov 26".
export function day(ms, inUtc = utc.value) {
  const p = parts(new Date(ms), inUtc);
  return `${DAYS[p.wd]}, ${MONTHS[p.mo]} ${p.day}`;
}

export function iso(ms) {
  return new Date(ms).toISOString();
}

// age says how long ago ms was, roughly.
export function age(ms, now = Date.now()) {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 48 * 3600) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86400).toFixed(1)} days`;
}

export function hours(h) {
  if (h < 1) return `${Math.round(h * 60)} min`;
  if (h < 48) return `${h.toFixed(1)} h`;
  return `${(h / 24).toFixed(1)} days`;
}

// The value of a datetime-local input for ms, and back (in the zone shown).
export function toInput(ms, inUtc = utc.value) {
  if (ms === null || ms === undefined || ms === "") return "";
  const d = new Date(Number(ms));
  const off = inUtc ? 0 : d.getTimezoneOffset() * 60000;
  return new Date(d.getTime() - off).toISOString().slice(0, 16);
}

export function fromInput(v, inUtc = utc.value) {
  if (!v) return "";
  const ms = inUtc ? Date.parse(v + ":00Z") : new Date(v).getTime();
  return Number.isFinite(ms) ? ms : "";
}
