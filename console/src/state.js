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

// me is who this tab is signed in as (GET /admin/whoami: principal, role,
// pipelines, permissions), or null until known. Each page shows the actions
// its permissions allow and says why the others are off. It is kept in this
// tab's sessionStorage (no credential: a name and a role), so a reload
// draws at once; main.jsx asks again at every load.
const ME = "redrive.me";
export const me = signal(storedMe());
me.subscribe((v) => {
  try {
    if (v) sessionStorage.setItem(ME, JSON.stringify(v));
    else sessionStorage.removeItem(ME);
  } catch {
    /* storage full or off */
  }
});

function storedMe() {
  try {
    const v = JSON.parse(sessionStorage.getItem(ME));
    return v && typeof v.principal === "string" && Array.isArray(v.permissions) ? v : null;
  } catch {
    return null;
  }
}

// can reports whether the principal holds permission p.
export function can(p) {
  return !!me.value?.permissions.includes(p);
}

// scoped reports whether the principal is limited to pipelines: routes of
// every pipeline (alerts, jobs, queues, the breaker, keys) refuse it.
export function scoped() {
  return Array.isArray(me.value?.pipelines);
}

// needs is why the principal may not use permission p ("" when it may).
export function needs(p) {
  return can(p) ? "" : `Needs the ${p} permission; your role is ${me.value?.role ?? "unknown"}.`;
}

// EVERY_NOTE is what a page says in place of what only a credential of
// every pipeline may read or do.
export const EVERY_NOTE = "not available to a key limited to pipelines";
