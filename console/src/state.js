// A tiny observable value (Preact has no global state of its own; this is
// all the console needs) and a hook to use it in components.
import { useEffect, useState } from "preact/hooks";

export function signal(value) {
  const subs = new Set();
  return {
    get value() {
      return value;
    },
    set value(v) {
      if (v === value) return;
      value = v;
      subs.forEach((f) => f(v));
    },
    subscribe(f) {
      subs.add(f);
      return () => subs.delete(f);
    },
  };
}

export function useSignal(s) {
  const [, set] = useState(0);
  useEffect(() => s.subscribe(() => set((n) => n + 1)), [s]);
  return s.value;
}

// pipelines is the configured pipelines' names (GET /admin/pipelines, read
// once signed in; main.jsx loads it), or null until they are known: the
// header's selector shows when there are two or more, and the header and
// the pages that show a pipeline column keep their place for it until then
// (what comes in later must not shift the page). The names of the last
// answer are kept in this tab's sessionStorage, so a reload knows them at
// once.
const NAMES = "redrive.pipelines";
export const pipelines = signal(stored());
pipelines.subscribe((v) => {
  try {
    if (v) sessionStorage.setItem(NAMES, JSON.stringify(v));
    else sessionStorage.removeItem(NAMES);
  } catch {
    /* storage full or off: only the next reload waits */
  }
});

function stored() {
  try {
    const v = JSON.parse(sessionStorage.getItem(NAMES));
    return Array.isArray(v) && v.every((n) => typeof n === "string") ? v : null;
  } catch {
    return null;
  }
}
