// The admin API calls of README.md and docs/*.md (docs/admin-api.md holds
// most), typed by the client openapi-typescript generates from
// handlers/openapi.json with its default options (`npm run check:ts-client`,
// part of `make test-native`). Every request body those pages send is here
// verbatim (client/readme_calls_test.go checks
// it), and bodies the API rejects must not type-check.
import type { paths } from "../../build/openapi-ts/api";

type Post<P extends keyof paths> = paths[P]["post"] extends {
  requestBody: { content: { "application/json": infer B } };
}
  ? B
  : never;
type Query<P extends keyof paths> = paths[P]["get"] extends {
  parameters: { query?: infer Q };
}
  ? NonNullable<Q>
  : never;

type Replay = Post<"/admin/dlq/replay">;
type Acknowledge = Post<"/admin/dlq/acknowledge">;
type Task = Post<"/admin/dlq/replay-tasks">;
type Edited = Post<"/admin/dlq/{id}/replay">;
type Enrich = Post<"/admin/enrich">;

export const replays: Replay[] = [
  {"ids":[1,2,3],"delay_seconds":60},
  {"filter":{"q":"Lagunitas"},"dry_run":true},
  {"filter":{"q":"Lagunitas"}},
  {"filter":{"q":"Lagunitas"},"cursor":"<next_cursor>"},
  {"ids":[1,2],"destination":"beer-enrichment"},
  {"filter":{"signature":"91d2e0b6c4a73f18"}},
  {"filter":{"version_not":"6f1c"},"dry_run":true},
];

export const acknowledges: Acknowledge[] = [
  {"ids":[4,5],"note":"duplicates"},
  {"filter":{"beer_id":"__unparseable__"},"dry_run":true},
  {"filter":{"beer_id":"__unparseable__"},"note":"poison"},
  {"filter":{"signature":"3c0f9a2b7d1e4c55"},"dry_run":true},
  {"filter":{"signature":"3c0f9a2b7d1e4c55"},"note":"bad model name, fixed in config"},
];

export const tasks: Task[] = [
  {"filter":{"q":"Lagunitas"},"rate_per_minute":120},
  {"filter":{"source_queue":"beer-enrichment"},"rate_per_minute":30,"delay_seconds":3600},
  {"filter":{"q":"Lagunitas"},"rate_per_minute":60,"canary":{"size":5,"min_success_ratio":0.8,"observe_minutes":15}},
];

export const edited: Edited[] = [
  {"body":{"beer_id":"7239443","beer_name":"Hop Stoopid","brewer":"Lagunitas"},"note":"beer_name was empty upstream"},
  {"body":{"beer_id":"42","beer_name":"Pliny","brewer":"Russian River"},"note":"name fixed upstream"},
];

export const enrich: Enrich[] = [
  {"beers":[{"beer_id":"7239443","beer_name":"Hop Stoopid","brewer":"Lagunitas"}]},
  {"beers":[{"beer_id":"42","beer_name":"Pliny [fail-400]","brewer":"Russian River"}]},
];

export const lists: Query<"/admin/dlq">[] = [
  {status: "pending", limit: 20},
  {status: "all", q: "lagunitas", failed_after: 1702300000000, include_raw: true},
  {limit: 20, cursor: "<next_cursor from the previous page>"},
  {signature: "3c0f9a2b7d1e4c55", status: "all"},
];
export const exports: Query<"/admin/dlq/export">[] = [
  {format: "csv", source_queue: "beer-enrichment"},
  {status: "all", q: "Lagunitas"},
];
export const audits: Query<"/admin/audit">[] = [{limit: 20}, {action: "replay", cursor: "<next_cursor>"}];
export const groups: Query<"/admin/dlq/groups">[] = [{limit: 20}, {incident: "open"}];
export const groupStatuses: Post<"/admin/dlq/groups/{signature}/status">[] = [
  {"status":"acknowledged","owner":"alice","note":"model name typo"},
  {"status":"snoozed","until":1796320800000},
];
export const rejectedGroupStatus: Post<"/admin/dlq/groups/{signature}/status">[] = [
  // @ts-expect-error not a status
  {"status":"closed"},
];

// What the API rejects must not type-check.
export const rejected: Replay[] = [
  // @ts-expect-error ids are integers
  {"ids":["not-a-number"]},
  // @ts-expect-error exactly one of ids and filter
  {"ids":[1],"filter":{"q":"Lagunitas"}},
  // @ts-expect-error one of ids and filter is required
  {"dry_run":true},
  // @ts-expect-error a cursor continues a bulk replay only
  {"ids":[1],"cursor":"abc"},
  // @ts-expect-error an unknown filter field
  {"filter":{"queue":"beer-enrichment"}},
];
export const rejectedAck: Acknowledge[] = [
  // @ts-expect-error ids are integers
  {"ids":["not-a-number"]},
  // @ts-expect-error exactly one of ids and filter
  {"ids":[1],"filter":{"q":"x"},"note":"both"},
];
export const rejectedTask: Task[] = [
  // @ts-expect-error rate_per_minute is required
  {"filter":{"q":"Lagunitas"}},
];
