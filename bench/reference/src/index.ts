// The original TypeScript DLQ worker, assembled from seed document 002 as the
// bar for redrive's benchmarks (`make bench`). Code between the `---- seed 002`
// markers is the seed's, as written (defects included). Everything marked FILL
// is not in the seed and was added only to make it run; README.md lists each.

// ---- FILL: types and helpers the seed uses but does not show ----
interface EnrichmentMessage {
  beer_id: string;
  beer_name: string;
  brewer: string;
}

interface RequestContext {
  requestId: string;
}

const CORS_HEADERS: Record<string, string> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
  'Access-Control-Allow-Headers': 'Content-Type, X-API-Key, X-Admin-Secret',
};

// JSON log lines, one per call, every level.
function log(level: string, message: string, data: Record<string, unknown> = {}, requestId?: string): void {
  console.log(JSON.stringify({ level, message, requestId, ...data, timestamp: new Date().toISOString() }));
}

// Constant-time comparison of a presented secret with the configured one.
function secretEquals(presented: string | null, expected: string | undefined): boolean {
  if (!presented || !expected) {
    return false;
  }
  const a = new TextEncoder().encode(presented);
  const b = new TextEncoder().encode(expected);
  if (a.byteLength !== b.byteLength) {
    return false;
  }
  return crypto.subtle.timingSafeEqual(a, b);
}

// The admin check seed §3.6 calls: X-Admin-Secret must equal ADMIN_SECRET.
async function authorizeAdmin(request: Request, env: Env): Promise<{ authorized: boolean; error?: string }> {
  if (!secretEquals(request.headers.get('X-Admin-Secret'), env.ADMIN_SECRET)) {
    return { authorized: false, error: 'Invalid admin secret' };
  }
  return { authorized: true };
}

// Scheduled handler: seed §5 says to add the cleanup to scheduled() on its own cron.
async function handleScheduled(event: ScheduledController, env: Env, ctx: ExecutionContext): Promise<void> {
  const requestId = crypto.randomUUID();
  if (event.cron === '0 3 * * *') {
    await cleanupOldDlqMessages(env.DB, requestId);
  }
}

// ---- FILL (bench only): POST /__dev/send ----
// Same request as redrive's e2e route: {"queue": "beer-enrichment-dlq",
// "messages": [{"body": "<JSON text>", "delay_seconds": 0}, ...]} (1..100).
// Bodies are parsed and sent as objects, as the original producers send them.
async function handleBenchSend(
  request: Request,
  queue: Queue<EnrichmentMessage>,
  headers: Record<string, string>,
  reqCtx: RequestContext
): Promise<Response> {
  const req = (await request.json()) as {
    queue?: string;
    messages?: { body: string; delay_seconds?: number }[];
  };
  const messages = req.messages || [];
  if (req.queue !== 'beer-enrichment-dlq' || messages.length === 0 || messages.length > 100) {
    return errorResponse('queue beer-enrichment-dlq and 1..100 messages are required', 'INVALID_REQUEST', {
      requestId: reqCtx.requestId,
      headers,
      status: 400,
    });
  }
  await queue.sendBatch(
    messages.map(m => ({
      body: JSON.parse(m.body) as EnrichmentMessage,
      delaySeconds: m.delay_seconds || 0,
    }))
  );
  return Response.json(
    { success: true, requestId: reqCtx.requestId, data: { sent: messages.length } },
    { headers }
  );
}

// ---- seed 002 §3.1 ----
export interface Env {
  // ... existing bindings ...

  // Database
  DB: D1Database;

  // Queue producer (for replay)
  ENRICHMENT_QUEUE: Queue<EnrichmentMessage>;

  // Secrets
  API_KEY: string;
  ADMIN_SECRET: string;

  // ... other existing bindings ...

  // FILL (bench only, not in the seed): producer for the DLQ, used by POST /__dev/send.
  BENCH_DLQ_QUEUE?: Queue<EnrichmentMessage>;
}

// ---- seed 002 §3.2 ----
interface ErrorResponseOptions {
  requestId: string;
  headers: Record<string, string>;
  status?: number;
}

function errorResponse(message: string, code: string, options: ErrorResponseOptions): Response {
  return Response.json(
    {
      success: false,
      error: {
        message,
        code,
      },
      requestId: options.requestId,
    },
    {
      status: options.status || 400,
      headers: options.headers,
    }
  );
}

// Usage examples:
// return errorResponse('ids array required', 'INVALID_REQUEST', { requestId, headers, status: 400 });
// return errorResponse('Database error', 'DB_ERROR', { requestId, headers, status: 500 });
// return errorResponse('Unauthorized', 'AUTH_FAILED', { requestId, headers, status: 403 });

// ---- seed 002 §3.3 ----
// Type for queue messages
interface QueueMessage {
  id: string; // Original message ID
  body: EnrichmentMessage;
  timestamp: Date;
  attempts: number;
}

export default {
  // ... existing fetch() handler ...
  // FILL: the seed shows only its routes (§3.6); handleFetch below wraps them.
  fetch: handleFetch,

  // ... existing scheduled() handler ...
  // FILL: runs §5's cleanup on its cron; see handleScheduled below.
  scheduled: handleScheduled,

  // Handle ALL queue messages (main queue and DLQ)
  async queue(
    batch: MessageBatch<EnrichmentMessage>,
    env: Env,
    ctx: ExecutionContext
  ): Promise<void> {
    const requestId = crypto.randomUUID();

    log(
      'info',
      'Queue batch received',
      {
        messageCount: batch.messages.length,
        queue: batch.queue,
      },
      requestId
    );

    // Route based on which queue the message came from
    if (batch.queue === 'beer-enrichment-dlq') {
      // DLQ messages - store to D1
      await handleDlqBatch(batch, env, requestId);
    } else if (batch.queue === 'beer-enrichment') {
      // Main queue messages - process enrichment
      await handleEnrichmentBatch(batch, env, requestId);
    } else {
      log('warn', 'Unknown queue', { queue: batch.queue }, requestId);
      // Ack unknown messages to prevent infinite loops
      for (const message of batch.messages) {
        message.ack();
      }
    }
  },
};

// Handle DLQ messages - store to D1
async function handleDlqBatch(
  batch: MessageBatch<EnrichmentMessage>,
  env: Env,
  requestId: string
): Promise<void> {
  for (const message of batch.messages) {
    try {
      await storeDlqMessage(env.DB, message, batch.queue, requestId);
      message.ack();

      // Analytics tracking for DLQ storage
      trackAnalytics(env, 'dlq_store', {
        beer_id: message.body?.beer_id,
        attempts: message.attempts,
      });

      log(
        'info',
        'DLQ message stored',
        {
          messageId: message.id,
          beerId: message.body?.beer_id,
          attempts: message.attempts,
        },
        requestId
      );
    } catch (error) {
      log(
        'error',
        'Failed to store DLQ message',
        {
          messageId: message.id,
          error: String(error),
        },
        requestId
      );

      // With max_retries: 3, retry() will requeue the message
      // After 3 failures, the message will be dropped
      message.retry();
    }
  }

  log(
    'info',
    'DLQ batch processed',
    {
      processedCount: batch.messages.length,
    },
    requestId
  );
}

// Handle main enrichment queue messages
async function handleEnrichmentBatch(
  batch: MessageBatch<EnrichmentMessage>,
  env: Env,
  requestId: string
): Promise<void> {
  // Existing enrichment processing logic goes here
  for (const message of batch.messages) {
    try {
      // ... enrichment logic ...
      message.ack();
    } catch (error) {
      log(
        'error',
        'Enrichment failed',
        {
          messageId: message.id,
          error: String(error),
        },
        requestId
      );
      // Retry will eventually send to DLQ after max_retries exhausted
      message.retry();
    }
  }
}

// Analytics tracking helper
function trackAnalytics(env: Env, operation: string, data: Record<string, unknown>): void {
  // Implement analytics tracking (e.g., to Analytics Engine, logging, etc.)
  // This is important for monitoring DLQ health
  log('debug', `Analytics: ${operation}`, data);
}

// ---- seed 002 §3.4 ----
async function storeDlqMessage(
  db: D1Database,
  message: Message<EnrichmentMessage>,
  sourceQueue: string,
  requestId: string
): Promise<void> {
  const body = message.body;
  const now = Date.now();

  // Note: failure_count comes from message.attempts
  // This is the number of delivery attempts Cloudflare made before sending to DLQ
  await db
    .prepare(
      `
    INSERT INTO dlq_messages (
      message_id, beer_id, beer_name, brewer,
      failed_at, failure_count, source_queue, raw_message, status
    ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')
    ON CONFLICT(message_id) DO UPDATE SET
      failed_at = excluded.failed_at,
      failure_count = excluded.failure_count,
      raw_message = excluded.raw_message,
      status = 'pending'
  `
    )
    .bind(
      message.id,
      body.beer_id,
      body.beer_name || null,
      body.brewer || null,
      now,
      message.attempts, // This is the actual attempt count from Cloudflare
      sourceQueue,
      JSON.stringify(body)
    )
    .run();
}

// ---- seed 002 §3.5 GET /admin/dlq ----
interface DlqListParams {
  status?: string; // Filter by status: pending, replayed, acknowledged
  beer_id?: string; // Filter by beer ID
  limit?: number; // Max results (default 50, max 100)
  cursor?: string; // Cursor for pagination (base64 encoded)
  include_raw?: boolean; // Include raw_message in response
}

interface PaginationCursor {
  failed_at: number;
  id: number;
}

async function handleDlqList(
  env: Env,
  headers: Record<string, string>,
  reqCtx: RequestContext,
  params: URLSearchParams
): Promise<Response> {
  const status = params.get('status') || 'pending';
  const beerId = params.get('beer_id');
  const limit = Math.min(parseInt(params.get('limit') || '50'), 100);
  const cursorParam = params.get('cursor');
  const includeRaw = params.get('include_raw') === 'true';

  // Decode cursor if provided
  let cursor: PaginationCursor | null = null;
  if (cursorParam) {
    try {
      cursor = JSON.parse(atob(cursorParam));
    } catch {
      return errorResponse('Invalid cursor format', 'INVALID_CURSOR', {
        requestId: reqCtx.requestId,
        headers,
        status: 400,
      });
    }
  }

  // Build query with cursor-based pagination
  // This is more efficient than OFFSET for large datasets
  let query = 'SELECT * FROM dlq_messages WHERE 1=1';
  const bindings: (string | number)[] = [];

  if (status && status !== 'all') {
    query += ' AND status = ?';
    bindings.push(status);
  }

  if (beerId) {
    query += ' AND beer_id = ?';
    bindings.push(beerId);
  }

  // Cursor-based pagination: get records after the cursor position
  if (cursor) {
    query += ' AND (failed_at < ? OR (failed_at = ? AND id < ?))';
    bindings.push(cursor.failed_at, cursor.failed_at, cursor.id);
  }

  // Order by failed_at DESC, id DESC for consistent pagination
  query += ' ORDER BY failed_at DESC, id DESC LIMIT ?';
  bindings.push(limit + 1); // Fetch one extra to check if there are more

  const { results } = await env.DB.prepare(query)
    .bind(...bindings)
    .all<DlqMessageRow>();

  // Check if there are more results
  const hasMore = results.length > limit;
  const pageResults = hasMore ? results.slice(0, limit) : results;

  // Generate next cursor from the last item
  let nextCursor: string | null = null;
  if (hasMore && pageResults.length > 0) {
    const lastItem = pageResults[pageResults.length - 1];
    const cursorData: PaginationCursor = {
      failed_at: lastItem.failed_at,
      id: lastItem.id,
    };
    nextCursor = btoa(JSON.stringify(cursorData));
  }

  // Get total count for the filtered status (for display purposes)
  let countQuery = 'SELECT COUNT(*) as count FROM dlq_messages WHERE 1=1';
  const countBindings: (string | number)[] = [];

  if (status && status !== 'all') {
    countQuery += ' AND status = ?';
    countBindings.push(status);
  }

  if (beerId) {
    countQuery += ' AND beer_id = ?';
    countBindings.push(beerId);
  }

  const countResult = await env.DB.prepare(countQuery)
    .bind(...countBindings)
    .first<{ count: number }>();

  const messages = pageResults.map(row => {
    const base = {
      id: row.id,
      message_id: row.message_id,
      beer_id: row.beer_id,
      beer_name: row.beer_name,
      brewer: row.brewer,
      failed_at: row.failed_at,
      failure_count: row.failure_count,
      failure_reason: row.failure_reason,
      source_queue: row.source_queue,
      status: row.status,
      replay_count: row.replay_count,
      replayed_at: row.replayed_at,
      acknowledged_at: row.acknowledged_at,
    };

    // Optionally include raw_message (can be large)
    if (includeRaw) {
      return { ...base, raw_message: row.raw_message };
    }
    return base;
  });

  return Response.json(
    {
      success: true,
      requestId: reqCtx.requestId,
      data: {
        messages,
        total_count: countResult?.count || 0,
        limit,
        next_cursor: nextCursor,
        has_more: hasMore,
      },
    },
    { headers }
  );
}

interface DlqMessageRow {
  id: number;
  message_id: string;
  beer_id: string;
  beer_name: string | null;
  brewer: string | null;
  failed_at: number;
  failure_count: number;
  failure_reason: string | null;
  source_queue: string;
  status: string;
  replay_count: number;
  replayed_at: number | null;
  acknowledged_at: number | null;
  raw_message: string | null;
}

// ---- seed 002 §3.5 POST /admin/dlq/replay ----
interface ReplayRequest {
  ids: number[]; // D1 row IDs to replay
  delay_seconds?: number; // Delay before processing (default 0)
}

async function handleDlqReplay(
  request: Request,
  env: Env,
  headers: Record<string, string>,
  reqCtx: RequestContext
): Promise<Response> {
  const body = (await request.json()) as ReplayRequest;
  const { ids, delay_seconds = 0 } = body;

  if (!Array.isArray(ids) || ids.length === 0) {
    return errorResponse('ids array required', 'INVALID_REQUEST', {
      requestId: reqCtx.requestId,
      headers,
      status: 400,
    });
  }

  // Limit batch size
  const limitedIds = ids.slice(0, 50);
  const now = Date.now();

  // STEP 1: Optimistically update status to 'replaying' to prevent race conditions
  // This ensures concurrent replay requests don't process the same messages
  const placeholders = limitedIds.map(() => '?').join(',');
  const updateResult = await env.DB.prepare(
    `UPDATE dlq_messages
     SET status = 'replaying'
     WHERE id IN (${placeholders}) AND status = 'pending'`
  )
    .bind(...limitedIds)
    .run();

  const claimedCount = updateResult.meta.changes;

  if (claimedCount === 0) {
    return Response.json(
      {
        success: true,
        requestId: reqCtx.requestId,
        data: {
          requested_count: limitedIds.length,
          replayed_count: 0,
          message: 'No pending messages found to replay',
        },
      },
      { headers }
    );
  }

  // STEP 2: Fetch the messages we just claimed
  const { results } = await env.DB.prepare(
    `SELECT id, raw_message, replay_count FROM dlq_messages
     WHERE id IN (${placeholders}) AND status = 'replaying'`
  )
    .bind(...limitedIds)
    .all<{ id: number; raw_message: string; replay_count: number }>();

  let replayedCount = 0;
  const replayedIds: number[] = [];
  const failedIds: number[] = [];

  // STEP 3: Send messages to queue
  for (const row of results) {
    try {
      const messageBody = JSON.parse(row.raw_message) as EnrichmentMessage;

      await env.ENRICHMENT_QUEUE.send(messageBody, {
        delaySeconds: delay_seconds,
      });

      replayedIds.push(row.id);
      replayedCount++;

      log(
        'info',
        'DLQ message replayed',
        {
          dlqId: row.id,
          beerId: messageBody.beer_id,
          replayCount: row.replay_count + 1,
        },
        reqCtx.requestId
      );
    } catch (error) {
      log(
        'error',
        'Failed to replay DLQ message',
        {
          dlqId: row.id,
          error: String(error),
        },
        reqCtx.requestId
      );
      failedIds.push(row.id);
    }
  }

  // STEP 4: Update successfully replayed messages
  if (replayedIds.length > 0) {
    const successPlaceholders = replayedIds.map(() => '?').join(',');
    await env.DB.prepare(
      `UPDATE dlq_messages
       SET status = 'replayed', replayed_at = ?, replay_count = replay_count + 1
       WHERE id IN (${successPlaceholders})`
    )
      .bind(now, ...replayedIds)
      .run();
  }

  // STEP 5: Rollback failed messages back to 'pending'
  if (failedIds.length > 0) {
    const failPlaceholders = failedIds.map(() => '?').join(',');
    await env.DB.prepare(
      `UPDATE dlq_messages
       SET status = 'pending'
       WHERE id IN (${failPlaceholders})`
    )
      .bind(...failedIds)
      .run();

    log(
      'warn',
      'Rolled back failed replay attempts',
      {
        failedIds,
      },
      reqCtx.requestId
    );
  }

  return Response.json(
    {
      success: true,
      requestId: reqCtx.requestId,
      data: {
        requested_count: limitedIds.length,
        claimed_count: claimedCount,
        replayed_count: replayedCount,
        failed_count: failedIds.length,
        queued_to: 'beer-enrichment',
      },
    },
    { headers }
  );
}

// ---- seed 002 §3.5 POST /admin/dlq/acknowledge ----
interface AcknowledgeRequest {
  ids: number[]; // D1 row IDs to acknowledge
}

async function handleDlqAcknowledge(
  request: Request,
  env: Env,
  headers: Record<string, string>,
  reqCtx: RequestContext
): Promise<Response> {
  const body = (await request.json()) as AcknowledgeRequest;
  const { ids } = body;

  if (!Array.isArray(ids) || ids.length === 0) {
    return errorResponse('ids array required', 'INVALID_REQUEST', {
      requestId: reqCtx.requestId,
      headers,
      status: 400,
    });
  }

  // Limit batch size
  const limitedIds = ids.slice(0, 100);
  const now = Date.now();

  const placeholders = limitedIds.map(() => '?').join(',');
  const result = await env.DB.prepare(
    `UPDATE dlq_messages
     SET status = 'acknowledged', acknowledged_at = ?
     WHERE id IN (${placeholders}) AND status = 'pending'`
  )
    .bind(now, ...limitedIds)
    .run();

  log(
    'info',
    'DLQ messages acknowledged',
    {
      requestedCount: limitedIds.length,
      acknowledgedCount: result.meta.changes,
    },
    reqCtx.requestId
  );

  return Response.json(
    {
      success: true,
      requestId: reqCtx.requestId,
      data: {
        acknowledged_count: result.meta.changes,
      },
    },
    { headers }
  );
}

// ---- seed 002 §3.5 GET /admin/dlq/stats ----
async function handleDlqStats(
  env: Env,
  headers: Record<string, string>,
  reqCtx: RequestContext
): Promise<Response> {
  // Get counts by status
  const { results: statusCounts } = await env.DB.prepare(
    `
    SELECT status, COUNT(*) as count
    FROM dlq_messages
    GROUP BY status
  `
  ).all<{ status: string; count: number }>();

  // Get oldest pending message
  const oldestPending = await env.DB.prepare(
    `
    SELECT failed_at
    FROM dlq_messages
    WHERE status = 'pending'
    ORDER BY failed_at ASC
    LIMIT 1
  `
  ).first<{ failed_at: number }>();

  // Get failure breakdown (top brewers with failures)
  const { results: topFailures } = await env.DB.prepare(
    `
    SELECT brewer, COUNT(*) as count
    FROM dlq_messages
    WHERE status = 'pending' AND brewer IS NOT NULL
    GROUP BY brewer
    ORDER BY count DESC
    LIMIT 10
  `
  ).all<{ brewer: string; count: number }>();

  // Get recent activity (last 24 hours)
  const dayAgo = Date.now() - 24 * 60 * 60 * 1000;
  const recentActivity = await env.DB.prepare(
    `
    SELECT
      COUNT(CASE WHEN status = 'replayed' AND replayed_at > ? THEN 1 END) as replayed_24h,
      COUNT(CASE WHEN status = 'acknowledged' AND acknowledged_at > ? THEN 1 END) as acknowledged_24h,
      COUNT(CASE WHEN failed_at > ? THEN 1 END) as new_failures_24h
    FROM dlq_messages
  `
  )
    .bind(dayAgo, dayAgo, dayAgo)
    .first<{
      replayed_24h: number;
      acknowledged_24h: number;
      new_failures_24h: number;
    }>();

  // Get messages with multiple replays (indicates persistent issues)
  const { results: repeatFailures } = await env.DB.prepare(
    `
    SELECT beer_id, beer_name, replay_count
    FROM dlq_messages
    WHERE status = 'pending' AND replay_count > 0
    ORDER BY replay_count DESC
    LIMIT 10
  `
  ).all<{ beer_id: string; beer_name: string | null; replay_count: number }>();

  const stats: Record<string, number> = {};
  for (const row of statusCounts) {
    stats[row.status] = row.count;
  }

  const oldestAgeHours = oldestPending
    ? (Date.now() - oldestPending.failed_at) / (60 * 60 * 1000)
    : 0;

  return Response.json(
    {
      success: true,
      requestId: reqCtx.requestId,
      data: {
        by_status: {
          pending: stats['pending'] || 0,
          replaying: stats['replaying'] || 0,
          replayed: stats['replayed'] || 0,
          acknowledged: stats['acknowledged'] || 0,
        },
        oldest_pending_age_hours: Math.round(oldestAgeHours * 10) / 10,
        top_failing_brewers: topFailures,
        repeat_failures: repeatFailures,
        last_24h: recentActivity || {
          replayed_24h: 0,
          acknowledged_24h: 0,
          new_failures_24h: 0,
        },
      },
    },
    { headers }
  );
}

// ---- FILL: the fetch handler around seed §3.6's routes ----
async function handleFetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const requestContext: RequestContext = { requestId: crypto.randomUUID() };
  const url = new URL(request.url);
  const corsHeaders: Record<string, string> | null = CORS_HEADERS;
  const rateLimitHeaders: Record<string, string> = {};

  // The API key authentication the seed's routes come after.
  if (!secretEquals(request.headers.get('X-API-Key'), env.API_KEY)) {
    return errorResponse('Invalid API key', 'UNAUTHORIZED', {
      requestId: requestContext.requestId,
      headers: corsHeaders || {},
      status: 401,
    });
  }

  try {
    // `return await`: the seed's routes return their handlers' promises, and a
    // rejection (e.g. a D1 error) must reach the catch below.
    return await routeRequest(request, env, url, requestContext, corsHeaders, rateLimitHeaders);
  } catch (error) {
    // A thrown handler becomes the seed's DB_ERROR envelope (seed §3.2's example).
    log('error', 'Request failed', { path: url.pathname, error: String(error) }, requestContext.requestId);
    return errorResponse(`Database error: ${String(error)}`, 'DB_ERROR', {
      requestId: requestContext.requestId,
      headers: corsHeaders || {},
      status: 500,
    });
  }
}

// FILL: the bench-only send route, then the seed's routes (§3.6, as written), then 404.
async function routeRequest(
  request: Request,
  env: Env,
  url: URL,
  requestContext: RequestContext,
  corsHeaders: Record<string, string> | null,
  rateLimitHeaders: Record<string, string>
): Promise<Response> {
  // Bench only: mirror of redrive's POST /__dev/send, behind the same admin check.
  if (url.pathname === '/__dev/send' && request.method === 'POST' && env.BENCH_DLQ_QUEUE) {
    const adminAuth = await authorizeAdmin(request, env);
    if (!adminAuth.authorized) {
      return errorResponse(adminAuth.error || 'Unauthorized', 'AUTH_FAILED', {
        requestId: requestContext.requestId,
        headers: corsHeaders || {},
        status: 403,
      });
    }
    return handleBenchSend(request, env.BENCH_DLQ_QUEUE, corsHeaders || {}, requestContext);
  }

  // ---- seed 002 §3.6 ----
  // In the fetch handler, after API key authentication:

  // Admin routes (require additional admin secret)
  if (url.pathname.startsWith('/admin/')) {
    const adminAuth = await authorizeAdmin(request, env);
    if (!adminAuth.authorized) {
      return errorResponse(adminAuth.error || 'Unauthorized', 'AUTH_FAILED', {
        requestId: requestContext.requestId,
        headers: corsHeaders || {},
        status: 403,
      });
    }

    // Route: GET /admin/dlq
    if (url.pathname === '/admin/dlq' && request.method === 'GET') {
      return handleDlqList(
        env,
        { ...corsHeaders!, ...rateLimitHeaders },
        requestContext,
        url.searchParams
      );
    }

    // Route: GET /admin/dlq/stats
    if (url.pathname === '/admin/dlq/stats' && request.method === 'GET') {
      return handleDlqStats(env, { ...corsHeaders!, ...rateLimitHeaders }, requestContext);
    }

    // Route: POST /admin/dlq/replay
    if (url.pathname === '/admin/dlq/replay' && request.method === 'POST') {
      return handleDlqReplay(request, env, { ...corsHeaders!, ...rateLimitHeaders }, requestContext);
    }

    // Route: POST /admin/dlq/acknowledge
    if (url.pathname === '/admin/dlq/acknowledge' && request.method === 'POST') {
      return handleDlqAcknowledge(
        request,
        env,
        { ...corsHeaders!, ...rateLimitHeaders },
        requestContext
      );
    }
  }
  // ---- end of seed 002 §3.6 ----

  return errorResponse('Not found', 'NOT_FOUND', {
    requestId: requestContext.requestId,
    headers: corsHeaders || {},
    status: 404,
  });
}

// ---- seed 002 §5 ----
// Add to scheduled() handler or a separate cron
async function cleanupOldDlqMessages(db: D1Database, requestId: string): Promise<void> {
  const thirtyDaysAgo = Date.now() - 30 * 24 * 60 * 60 * 1000;
  const batchLimit = 1000; // Limit deletions per iteration to avoid long-running queries

  // Delete acknowledged messages older than 30 days (in batches)
  let ackDeleted = 0;
  let ackResult;
  do {
    ackResult = await db
      .prepare(
        `
      DELETE FROM dlq_messages
      WHERE id IN (
        SELECT id FROM dlq_messages
        WHERE status = 'acknowledged'
          AND acknowledged_at < ?
        LIMIT ?
      )
    `
      )
      .bind(thirtyDaysAgo, batchLimit)
      .run();
    ackDeleted += ackResult.meta.changes;
  } while (ackResult.meta.changes === batchLimit);

  // Delete replayed messages older than 30 days (in batches)
  let replayDeleted = 0;
  let replayResult;
  do {
    replayResult = await db
      .prepare(
        `
      DELETE FROM dlq_messages
      WHERE id IN (
        SELECT id FROM dlq_messages
        WHERE status = 'replayed'
          AND replayed_at < ?
        LIMIT ?
      )
    `
      )
      .bind(thirtyDaysAgo, batchLimit)
      .run();
    replayDeleted += replayResult.meta.changes;
  } while (replayResult.meta.changes === batchLimit);

  if (ackDeleted > 0 || replayDeleted > 0) {
    log(
      'info',
      'DLQ cleanup completed',
      {
        acknowledged_deleted: ackDeleted,
        replayed_deleted: replayDeleted,
      },
      requestId
    );
  }
}
