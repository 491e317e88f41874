import { age } from "./time.js";

// QueueBacklogs shows the live backlog of each queue the worker sends to
// (GET /admin/queues: Cloudflare Queues' own figures, read through the
// producer binding): messages waiting to be delivered, and how long the
// oldest has waited. Nothing when no queue's backlog could be read.
export function QueueBacklogs({ queues }) {
  const qs = (queues?.queues ?? []).filter((q) => q.available);
  if (!qs.length) return null;
  return (
    <section aria-labelledby="h-queues">
      <h2 id="h-queues">Queue backlog</h2>
      <ul class="cards">
        {qs.map((q) => (
          <li key={q.queue} class="card">
            <span class="queue-value">{q.backlog_count}</span>
            <span class="card-label">
              waiting in {q.queue}
              {q.oldest_message_at ? `, the oldest for ${age(q.oldest_message_at)}` : ""}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}
