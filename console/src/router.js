// Hash routes (#/, #/failures?..., #/failures/12, #/audit): the worker
// serves one page, and filters stay in the address bar without reaching
// the server. Credentials never go into it.
import { signal } from "./state.js";
import { query } from "./api.js";

function parse() {
  const h = location.hash.slice(1) || "/";
  const i = h.indexOf("?");
  const path = i < 0 ? h : h.slice(0, i);
  const params = Object.fromEntries(new URLSearchParams(i < 0 ? "" : h.slice(i + 1)));
  return { path, params };
}

export const route = signal(parse());
window.addEventListener("hashchange", () => {
  route.value = parse();
});

export function href(path, params) {
  return "#" + path + query(params);
}

// navigate goes to path; replace keeps the history entry (typing in a filter).
export function navigate(path, params, replace = false) {
  const h = href(path, params);
  if (replace) {
    history.replaceState(null, "", h);
    route.value = parse();
  } else {
    location.hash = h;
  }
}
