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

// pipeline is the header's pipeline selector ("" = all pipelines). It
// travels in every address (?pipeline=, so a link keeps it) and in
// sessionStorage like the UTC switch; an address that names one wins.
const PIPELINE = "redrive.pipeline";
export const pipeline = signal(parse().params.pipeline ?? sessionStorage.getItem(PIPELINE) ?? "");
pipeline.subscribe((v) => sessionStorage.setItem(PIPELINE, v));

// withPipeline adds the selected pipeline to params (or takes it out).
function withPipeline(params) {
  const p = { ...params };
  if (pipeline.value) p.pipeline = pipeline.value;
  else delete p.pipeline;
  return p;
}

// current parses the address and, when it lacks the selected pipeline (an
// old bookmark), writes it in without a history entry.
function current() {
  const r = parse();
  if (r.params.pipeline !== undefined) pipeline.value = r.params.pipeline;
  else if (pipeline.value) {
    history.replaceState(null, "", href(r.path, r.params));
    return parse();
  }
  return r;
}

export const route = signal(current());
window.addEventListener("hashchange", () => {
  route.value = current();
});

export function href(path, params) {
  return "#" + path + query(withPipeline(params));
}

// selectPipeline switches the header's selector and keeps the page;
// replace keeps the history entry (a choice the console made itself).
export function selectPipeline(name, replace = false) {
  pipeline.value = name;
  navigate(route.value.path, route.value.params, replace);
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
