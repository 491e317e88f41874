var __defProp = Object.defineProperty;
var __name = (target, value) => __defProp(target, "name", { value, configurable: true });

// index.mjs
var schema = `CREATE TABLE IF NOT EXISTS e2e_js_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue TEXT NOT NULL,
  message_id TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  typeof_body TEXT NOT NULL,        -- typeof body, or "ArrayBuffer"
  body_json_or_text TEXT NOT NULL,  -- JSON.stringify for objects, the string, base64 for bytes
  received_at INTEGER NOT NULL
)`;
var ready;
function base64(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}
__name(base64, "base64");
function unbase64(text) {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
__name(unbase64, "unbase64");
function describe(body) {
  if (body instanceof ArrayBuffer) return ["ArrayBuffer", base64(new Uint8Array(body))];
  if (typeof body === "string") return ["string", body];
  if (typeof body === "object") return ["object", JSON.stringify(body)];
  return [typeof body, String(body)];
}
__name(describe, "describe");
function wantsFailure(body) {
  if (body instanceof ArrayBuffer) return new Uint8Array(body)[0] === 255;
  if (typeof body === "string") return body.includes("FAIL");
  if (Array.isArray(body)) return body.includes("FAIL");
  return body !== null && typeof body === "object" && body.fail === true;
}
__name(wantsFailure, "wantsFailure");
async function produce(batch, env) {
  for (const msg of batch.messages) {
    const cmd = JSON.parse(msg.body);
    switch (cmd.content_type) {
      case "json":
        await env.JS_QUEUE.send(JSON.parse(cmd.body), { contentType: "json" });
        break;
      case "default":
        await env.JS_QUEUE.send(JSON.parse(cmd.body));
        break;
      case "text":
        await env.JS_QUEUE.send(cmd.body, { contentType: "text" });
        break;
      case "bytes":
        await env.JS_QUEUE.send(unbase64(cmd.body), { contentType: "bytes" });
        break;
      default:
        throw new Error(`unknown content_type ${cmd.content_type}`);
    }
    msg.ack();
  }
}
__name(produce, "produce");
async function consume(batch, env) {
  ready ??= env.DB.prepare(schema).run().catch((err) => {
    ready = void 0;
    throw err;
  });
  await ready;
  const now = Date.now();
  const insert = env.DB.prepare(`INSERT INTO e2e_js_deliveries(queue, message_id, attempts, typeof_body, body_json_or_text, received_at)
    VALUES (?, ?, ?, ?, ?, ?)`);
  await env.DB.batch(batch.messages.map((m) => insert.bind(batch.queue, m.id, m.attempts, ...describe(m.body), now)));
  for (const m of batch.messages) {
    if (wantsFailure(m.body)) m.retry();
    else m.ack();
  }
}
__name(consume, "consume");
var index_default = {
  async fetch() {
    return new Response("e2e JavaScript consumer: queues only\n", { status: 404 });
  },
  async queue(batch, env) {
    if (batch.queue === "e2e-js-produce") return produce(batch, env);
    return consume(batch, env);
  }
};

// ../../node_modules/wrangler/templates/middleware/middleware-ensure-req-body-drained.ts
var drainBody = /* @__PURE__ */ __name(async (request, env, _ctx, middlewareCtx) => {
  try {
    return await middlewareCtx.next(request, env);
  } finally {
    try {
      if (request.body !== null && !request.bodyUsed) {
        const reader = request.body.getReader();
        while (!(await reader.read()).done) {
        }
      }
    } catch (e) {
      console.error("Failed to drain the unused request body.", e);
    }
  }
}, "drainBody");
var middleware_ensure_req_body_drained_default = drainBody;

// ../../node_modules/wrangler/templates/middleware/middleware-miniflare3-json-error.ts
function reduceError(e) {
  return {
    name: e?.name,
    message: e?.message ?? String(e),
    stack: e?.stack,
    cause: e?.cause === void 0 ? void 0 : reduceError(e.cause)
  };
}
__name(reduceError, "reduceError");
var jsonError = /* @__PURE__ */ __name(async (request, env, _ctx, middlewareCtx) => {
  try {
    return await middlewareCtx.next(request, env);
  } catch (e) {
    const error = reduceError(e);
    return Response.json(error, {
      status: 500,
      headers: { "MF-Experimental-Error-Stack": "true" }
    });
  }
}, "jsonError");
var middleware_miniflare3_json_error_default = jsonError;

// wrangler-config:config:middleware/patch-console-prefix
var prefix = "[redrive-e2e-jsconsumer-e2e]";

// ../../node_modules/wrangler/templates/middleware/middleware-patch-console-prefix.ts
["log", "debug", "info"].forEach((method) => {
  globalThis.console[method] = new Proxy(globalThis.console[method], {
    apply(target, thisArg, argumentsList) {
      return target.apply(thisArg, [prefix, ...argumentsList]);
    }
  });
});
var passthrough = /* @__PURE__ */ __name((request, env, _ctx, middlewareCtx) => {
  return middlewareCtx.next(request, env);
}, "passthrough");
var middleware_patch_console_prefix_default = passthrough;

// .wrangler/tmp/bundle-9nfzlf/middleware-insertion-facade.js
var __INTERNAL_WRANGLER_MIDDLEWARE__ = [
  middleware_ensure_req_body_drained_default,
  middleware_miniflare3_json_error_default,
  middleware_patch_console_prefix_default
];
var middleware_insertion_facade_default = index_default;

// ../../node_modules/wrangler/templates/middleware/common.ts
var __facade_middleware__ = [];
function __facade_register__(...args) {
  __facade_middleware__.push(...args.flat());
}
__name(__facade_register__, "__facade_register__");
function __facade_invokeChain__(request, env, ctx, dispatch, middlewareChain) {
  const [head, ...tail] = middlewareChain;
  const middlewareCtx = {
    dispatch,
    next(newRequest, newEnv) {
      return __facade_invokeChain__(newRequest, newEnv, ctx, dispatch, tail);
    }
  };
  return head(request, env, ctx, middlewareCtx);
}
__name(__facade_invokeChain__, "__facade_invokeChain__");
function __facade_invoke__(request, env, ctx, dispatch, finalMiddleware) {
  return __facade_invokeChain__(request, env, ctx, dispatch, [
    ...__facade_middleware__,
    finalMiddleware
  ]);
}
__name(__facade_invoke__, "__facade_invoke__");

// .wrangler/tmp/bundle-9nfzlf/middleware-loader.entry.ts
var __Facade_ScheduledController__ = class ___Facade_ScheduledController__ {
  constructor(scheduledTime, cron, noRetry) {
    this.scheduledTime = scheduledTime;
    this.cron = cron;
    this.#noRetry = noRetry;
  }
  static {
    __name(this, "__Facade_ScheduledController__");
  }
  #noRetry;
  noRetry() {
    if (!(this instanceof ___Facade_ScheduledController__)) {
      throw new TypeError("Illegal invocation");
    }
    this.#noRetry();
  }
};
function wrapExportedHandler(worker) {
  if (__INTERNAL_WRANGLER_MIDDLEWARE__ === void 0 || __INTERNAL_WRANGLER_MIDDLEWARE__.length === 0) {
    return worker;
  }
  for (const middleware of __INTERNAL_WRANGLER_MIDDLEWARE__) {
    __facade_register__(middleware);
  }
  const fetchDispatcher = /* @__PURE__ */ __name(function(request, env, ctx) {
    if (worker.fetch === void 0) {
      throw new Error("Handler does not export a fetch() function.");
    }
    return worker.fetch(request, env, ctx);
  }, "fetchDispatcher");
  return {
    ...worker,
    fetch(request, env, ctx) {
      const dispatcher = /* @__PURE__ */ __name(function(type, init) {
        if (type === "scheduled" && worker.scheduled !== void 0) {
          const controller = new __Facade_ScheduledController__(
            Date.now(),
            init.cron ?? "",
            () => {
            }
          );
          return worker.scheduled(controller, env, ctx);
        }
      }, "dispatcher");
      return __facade_invoke__(request, env, ctx, dispatcher, fetchDispatcher);
    }
  };
}
__name(wrapExportedHandler, "wrapExportedHandler");
function wrapWorkerEntrypoint(klass) {
  if (__INTERNAL_WRANGLER_MIDDLEWARE__ === void 0 || __INTERNAL_WRANGLER_MIDDLEWARE__.length === 0) {
    return klass;
  }
  for (const middleware of __INTERNAL_WRANGLER_MIDDLEWARE__) {
    __facade_register__(middleware);
  }
  return class extends klass {
    #fetchDispatcher = /* @__PURE__ */ __name((request, env, ctx) => {
      this.env = env;
      this.ctx = ctx;
      if (super.fetch === void 0) {
        throw new Error("Entrypoint class does not define a fetch() function.");
      }
      return super.fetch(request);
    }, "#fetchDispatcher");
    #dispatcher = /* @__PURE__ */ __name((type, init) => {
      if (type === "scheduled" && super.scheduled !== void 0) {
        const controller = new __Facade_ScheduledController__(
          Date.now(),
          init.cron ?? "",
          () => {
          }
        );
        return super.scheduled(controller);
      }
    }, "#dispatcher");
    fetch(request) {
      return __facade_invoke__(
        request,
        this.env,
        this.ctx,
        this.#dispatcher,
        this.#fetchDispatcher
      );
    }
  };
}
__name(wrapWorkerEntrypoint, "wrapWorkerEntrypoint");
var WRAPPED_ENTRY;
if (typeof middleware_insertion_facade_default === "object") {
  WRAPPED_ENTRY = wrapExportedHandler(middleware_insertion_facade_default);
} else if (typeof middleware_insertion_facade_default === "function") {
  WRAPPED_ENTRY = wrapWorkerEntrypoint(middleware_insertion_facade_default);
}
var middleware_loader_entry_default = WRAPPED_ENTRY;
export {
  __INTERNAL_WRANGLER_MIDDLEWARE__,
  middleware_loader_entry_default as default
};
//# sourceMappingURL=index.js.map
