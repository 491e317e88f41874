// Times: the viewer's zone by default, UTC when asked (the header's switch);
// the other one is always in the title.
import { signal } from "./state.js";

export const utc = signal(sessionStorage.getItem("redrive.utc") === "1");
utc.subscribe((v) => sessionStorage.setItem("redrive.utc", v ? "1" : "0"));

const local = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short",
});
const inUTC = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZone: "UTC", timeZoneName: "short",
});

export const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "local";

export function format(ms, inUtc = utc.value) {
  if (ms === null || ms === undefined) return "—";
  return (inUtc ? inUTC : local).format(new Date(ms));
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
