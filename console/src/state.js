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
// once signed in); the header's selector shows when there are two or more.
export const pipelines = signal([]);
