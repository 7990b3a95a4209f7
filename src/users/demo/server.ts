import type { Server } from "node:http";
import { type AddressInfo, isIPv4, isIPv6 } from "node:net";
import { serve } from "@hono/node-server";
import { type Context, Hono } from "hono";
import { z } from "zod";
import { TerrariumError } from "../../core/errors.js";
import { hashToken } from "../../core/token-hash.js";
import { loadConfig } from "../../models/config.js";
import { Models } from "../../models/hub.js";
import { readLimited } from "../../server/http.js";
import { buildEngine } from "../../sim/build-engine.js";
import type { Engine } from "../../sim/engine.js";
import { PlannerTarget } from "../agents/planner.js";
import { DEFAULT_MAX_TOOL_STEPS, DEFAULT_TIMEOUT_MS } from "../agents/shared.js";
import { ChatSessions, ChatTurnError, chatLimits, MAX_MESSAGE_CHARS } from "./chat.js";
import { lookupStatic, shopFolder, staticResponse } from "./static.js";

/** The environment behind the shop and its agent. */
export const SHOP_ENVIRONMENT = "tau2-retail";
/** Where terrarium's own API (sessions, history, state, tools) is mounted. */
export const TERRARIUM_PREFIX = "/terrarium";
/** Largest body of POST /api/chat. */
export const MAX_CHAT_BODY_BYTES = 16 * 1024;

export interface ShopDemoOptions {
  /** Port to listen on; 0 picks a free one (default 8090). */
  port?: number;
  /** Address to listen on (default 127.0.0.1). Its name is one the shop answers for, unless a wildcard. */
  host?: string;
  /** Host names the shop answers for besides localhost, 127.0.0.1, [::1] and `host` (DNS rebinding). */
  allowedHosts?: string[];
  /** Bearer tokens of the /terrarium/ API; without any it is open (as `terrarium serve` without --token). */
  tokens?: string[];
  /** The planner agent's model (`provider:model`); else roles.agent, else roles.default, else scripted. */
  agentModel?: string;
  /** Models to use (their config and ledger); otherwise built from `config`. The caller closes them. */
  models?: Models;
  /** terrarium.config.yaml to read when `models` is not given. */
  config?: string;
  /** Seeds the engine (its sessions, clocks) and the planner's model calls; never the chat ids. */
  seed?: string;
  /** Live conversations at most (default 500); a new one past this is refused with 503 until one ends. */
  maxChatSessions?: number;
  /** A conversation without a message for this many milliseconds is closed (default 30 minutes). */
  chatIdleMs?: number;
}

export interface ShopDemo {
  /** Base URL, ending with `/`. */
  url: string;
  /** `scripted` without a model, else `planner`. */
  mode: "scripted" | "planner";
  /** The planner's model, when there is one. */
  agentModel?: string;
  engine: Engine;
  /** The live conversations (their count, `closed` events). */
  chats: ChatSessions;
  /** The host names the shop answers for (canonical: lower case, IPv6 in brackets). */
  allowedHosts: string[];
  close: () => Promise<void>;
}

interface RetailVariant {
  item_id: string;
  options: Record<string, string>;
  available: boolean;
  price: number;
}
interface RetailProduct {
  name: string;
  product_id: string;
  variants: Record<string, RetailVariant>;
}
interface RetailOrder {
  order_id: string;
  status: string;
  address: { city: string; state: string; country: string };
  items: Array<{ name: string; product_id: string; item_id: string; price: number; options: object }>;
  fulfillments: Array<{ tracking_id: string[]; item_ids: string[] }>;
  payment_history: Array<{ transaction_type: string; amount: number }>;
  cancel_reason?: string;
  return_items?: string[];
  exchange_items?: string[];
  exchange_new_items?: string[];
}
interface RetailState {
  products: Record<string, RetailProduct>;
  orders: Record<string, RetailOrder>;
}

const ChatRequest = z.strictObject({
  sessionId: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,128}$/, "a session id is letters, digits, '-' and '_' (at most 128)")
    .optional(),
  message: z
    .string()
    .trim()
    .min(1, "the message is empty")
    .max(MAX_MESSAGE_CHARS, `the message is longer than ${MAX_MESSAGE_CHARS} characters`),
});

/** What the widget and the harness reading its sessions need of terrarium's API; nothing else is routed. */
export const TERRARIUM_ROUTES = [
  "GET /terrarium/tools",
  "GET /terrarium/sessions/{chat id}/history",
  "GET /terrarium/sessions/{chat id}/state",
] as const;
/** Names every demo shop answers for, whatever it listens on. */
export const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"] as const;

const ORDER_ID = /^#?(W\d{7})$/i;
const PRODUCT_ID = /^\d{1,20}$/;
const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** An error answer; `extra` adds fields beside `error` (the chat session a failed turn belongs to). */
const apiError = (
  c: Context,
  status: 400 | 401 | 403 | 404 | 405 | 413 | 415 | 502 | 503,
  code: string,
  message: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) =>
  c.json({ error: { code, message }, ...extra }, status, {
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
    ...headers,
  });

const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * A host name or address in the form a `Host` header carries it: lower case, no trailing dot, IPv6 in
 * brackets; undefined when it is neither an IP address nor a DNS name.
 */
export function canonicalHost(name: string): string | undefined {
  const text = name.trim().toLowerCase();
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  if (isIPv6(bare)) return `[${bare}]`;
  if (bare !== text) return undefined;
  if (isIPv4(text)) return text;
  const dotless = text.endsWith(".") ? text.slice(0, -1) : text;
  if (dotless.length === 0 || dotless.length > 253) return undefined;
  return dotless.split(".").every((label) => HOST_LABEL.test(label)) ? dotless : undefined;
}

/** The host name of a `Host` header (`name`, `name:port`, `[v6]:port`), canonical; undefined when malformed. */
export function hostOfHeader(header: string): string | undefined {
  const match = /^(\[[^\]]*\]|[^:[\]]*)(?::\d{1,5})?$/.exec(header.trim());
  return match ? canonicalHost(match[1] as string) : undefined;
}

/** The names a shop listening on `host` answers for: loopback, `host` unless a wildcard, the extra names. */
export function allowedHostNames(host: string, extra: readonly string[] = []): string[] {
  const names = new Set<string>(LOOPBACK_HOSTS);
  const own = canonicalHost(host);
  if (own && own !== "0.0.0.0" && own !== "[::]") names.add(own);
  for (const name of extra) {
    if (/:\d+$/.test(name.trim()) && !isIPv6(name.trim()))
      throw new TerrariumError("INVALID_INPUT", `allowed host "${name}": give the name without a port`);
    const canonical = canonicalHost(name);
    if (!canonical)
      throw new TerrariumError(
        "INVALID_INPUT",
        `allowed host "${name}" is not a host name (example.com) or an IP address`,
      );
    names.add(canonical);
  }
  return [...names];
}

/** Bearer tokens: non-empty, no spaces or control characters (they could not travel in the header). */
function checkedTokens(tokens: readonly string[]): string[] {
  for (const token of tokens)
    if (!/^[\x21-\x7e]+$/.test(token))
      throw new TerrariumError(
        "INVALID_INPUT",
        "a token must be printable ASCII without spaces (it travels as Authorization: Bearer <token>)",
      );
  return tokens.map(hashToken);
}

/**
 * The demo shop: its pages (examples/shop), a JSON API over the tau2-retail store, the chat agent
 * (terrarium's planner with a model, scripted rules without), and terrarium's own API under /terrarium
 * so the agent's tool calls can be read per chat session (`/terrarium/sessions/{id}/history`).
 */
export async function startShopDemo(options: ShopDemoOptions = {}): Promise<ShopDemo> {
  const host = options.host ?? "127.0.0.1";
  const listenHost = canonicalHost(host);
  if (!listenHost)
    throw new TerrariumError(
      "INVALID_INPUT",
      `the demo shop listens on an IP address or a host name (got "${host}")`,
    );
  const allowedHosts = allowedHostNames(host, options.allowedHosts ?? []);
  const tokens = checkedTokens(options.tokens ?? []);
  const chatOptions = {
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.maxChatSessions !== undefined ? { maxSessions: options.maxChatSessions } : {}),
    ...(options.chatIdleMs !== undefined ? { idleMs: options.chatIdleMs } : {}),
  };
  chatLimits(chatOptions);
  const port = options.port ?? 8090;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new TerrariumError(
      "INVALID_INPUT",
      `the port must be a whole number from 0 to 65535 (got ${port})`,
    );
  const root = shopFolder();
  const ownModels = options.models === undefined;
  const models =
    options.models ??
    new Models({ config: loadConfig(options.config !== undefined ? { path: options.config } : {}).config });
  const agentModel = options.agentModel ?? models.config.roles.agent ?? models.config.roles.default;
  const closeModels = () => (ownModels ? models.close() : Promise.resolve());
  let built: Awaited<ReturnType<typeof buildEngine>>;
  try {
    // The planner's provider and key are checked before anything is built.
    if (agentModel !== undefined) await models.backend(agentModel);
    built = await buildEngine({
      sources: [SHOP_ENVIRONMENT],
      models,
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
    });
  } catch (error) {
    await closeModels();
    throw error;
  }
  const { engine } = built;
  const chats = new ChatSessions(
    engine,
    agentModel !== undefined
      ? {
          kind: "planner",
          target: new PlannerTarget(`planner:${agentModel}`, agentModel, {
            engine,
            models,
            maxToolSteps: DEFAULT_MAX_TOOL_STEPS,
            timeoutMs: DEFAULT_TIMEOUT_MS,
          }),
        }
      : { kind: "scripted" },
    chatOptions,
  );
  const initial = (await built.environment?.initialState()) as RetailState;
  const app = shopApp({
    root,
    engine,
    initial,
    chats,
    agentModel,
    allowedHosts: new Set(allowedHosts),
    tokens: new Set(tokens),
  });

  const shutdown = async () => {
    await chats.close();
    await engine.close();
    await closeModels();
  };
  // What to print: a wildcard address is reached through loopback.
  const shown = listenHost === "0.0.0.0" ? "127.0.0.1" : listenHost === "[::]" ? "[::1]" : listenHost;
  return new Promise<ShopDemo>((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port, hostname: host }, (info: AddressInfo) => {
      server.off("error", failed);
      resolve({
        url: `http://${shown}:${info.port}/`,
        mode: chats.mode,
        ...(agentModel !== undefined ? { agentModel } : {}),
        engine,
        chats,
        allowedHosts,
        close: () =>
          new Promise<void>((done) => {
            const http = server as Server;
            http.close(() => void shutdown().then(done, done));
            http.closeIdleConnections?.();
            // Browsers keep connections open; give in-flight answers a moment, then cut the rest.
            setTimeout(() => http.closeAllConnections?.(), 1000).unref();
          }),
      });
    }) as Server;
    const failed = (error: NodeJS.ErrnoException) => {
      const reason =
        error.code === "EADDRINUSE"
          ? `port ${port} on ${host} is already in use; choose another with --port (0 picks a free one)`
          : `cannot listen on ${host}:${port}: ${error.message}`;
      void shutdown().finally(() => reject(new TerrariumError("INVALID_INPUT", reason, { cause: error })));
    };
    server.once("error", failed);
  });
}

interface ShopAppParts {
  root: string;
  engine: Engine;
  initial: RetailState;
  chats: ChatSessions;
  agentModel: string | undefined;
  /** Canonical host names answered (see `allowedHostNames`). */
  allowedHosts: ReadonlySet<string>;
  /** Hashes of the bearer tokens of /terrarium/ (`hashToken`); empty: open. */
  tokens: ReadonlySet<string>;
}

/** The shop's routes (exported for tests that need no socket). */
export function shopApp(parts: ShopAppParts): Hono {
  const { root, engine, initial, chats, allowedHosts, tokens } = parts;
  const app = new Hono();

  // DNS rebinding: a page of another site whose name now resolves to this address sends its own name.
  app.use("*", async (c, next) => {
    const header = c.req.header("host") ?? "";
    const name = hostOfHeader(header);
    if (name !== undefined && allowedHosts.has(name)) return next();
    return apiError(
      c,
      403,
      "HOST_NOT_ALLOWED",
      name === undefined
        ? "the request has no valid Host header"
        : `the demo shop does not answer for host "${name}"; start it with --allowed-host ${name} to allow it`,
    );
  });

  // terrarium's API: a bearer token when the shop has some, then only the routes of TERRARIUM_ROUTES.
  app.use("*", async (c, next) => {
    const path = c.req.path;
    if (path !== TERRARIUM_PREFIX && !path.startsWith(`${TERRARIUM_PREFIX}/`)) return next();
    if (tokens.size === 0) return next();
    const presented = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "")?.[1];
    if (presented !== undefined && tokens.has(hashToken(presented))) return next();
    return apiError(
      c,
      401,
      "UNAUTHORIZED",
      presented ? "the bearer token is not accepted" : "send Authorization: Bearer <token>",
      {},
      { "www-authenticate": 'Bearer realm="terrarium demo shop"' },
    );
  });
  // A chat's engine session, by the chat's id: only live conversations are reachable.
  const chatSession = (c: Context) => {
    const id = c.req.param("id") ?? "";
    return SESSION_ID.test(id) ? chats.engineSession(id) : undefined;
  };
  const noChat = (c: Context) =>
    apiError(c, 404, "UNKNOWN_SESSION", `no chat session ${c.req.param("id")?.slice(0, 128) ?? ""}`);
  app.get(`${TERRARIUM_PREFIX}/tools`, (c) => c.json(engine.catalog.toJSON()));
  app.get(`${TERRARIUM_PREFIX}/sessions/:id/history`, async (c) => {
    const session = chatSession(c);
    return session === undefined ? noChat(c) : c.json(await engine.history(session));
  });
  app.get(`${TERRARIUM_PREFIX}/sessions/:id/state`, async (c) => {
    const session = chatSession(c);
    return session === undefined ? noChat(c) : c.json(await engine.state(session));
  });
  const notExposed = (c: Context) =>
    apiError(
      c,
      404,
      "NOT_FOUND",
      `the demo shop exposes only ${TERRARIUM_ROUTES.join(", ")} of terrarium's API (no ${c.req.method} ${c.req.path})`,
    );
  app.all(TERRARIUM_PREFIX, notExposed);
  app.all(`${TERRARIUM_PREFIX}/*`, notExposed);

  app.get("/api/info", (c) =>
    c.json({
      environment: SHOP_ENVIRONMENT,
      agent: chats.mode,
      ...(parts.agentModel !== undefined ? { model: parts.agentModel } : {}),
      terrarium: TERRARIUM_PREFIX,
    }),
  );

  app.get("/api/products", (c) =>
    c.json({
      products: Object.values(initial.products)
        .map((product) => {
          const variants = Object.values(product.variants);
          const prices = variants.map((variant) => variant.price);
          return {
            product_id: product.product_id,
            name: product.name,
            variants: variants.length,
            available: variants.filter((variant) => variant.available).length,
            min_price: prices.length ? Math.min(...prices) : null,
            max_price: prices.length ? Math.max(...prices) : null,
          };
        })
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    }),
  );

  app.get("/api/products/:id", (c) => {
    const id = c.req.param("id");
    if (!PRODUCT_ID.test(id)) return apiError(c, 400, "INVALID_INPUT", "a product id is digits only");
    const product = Object.hasOwn(initial.products, id) ? initial.products[id] : undefined;
    if (!product) return apiError(c, 404, "NOT_FOUND", `no product ${id}`);
    return c.json({
      product_id: product.product_id,
      name: product.name,
      variants: Object.values(product.variants).map((variant) => ({
        item_id: variant.item_id,
        options: variant.options,
        available: variant.available,
        price: variant.price,
      })),
    });
  });

  // An order as the shop's page shows it: from the chat session's state when the page names one (so a
  // return made in the chat shows), else from the store's initial state.
  app.get("/api/orders/:id", async (c) => {
    const match = ORDER_ID.exec(c.req.param("id"));
    if (!match) return apiError(c, 400, "INVALID_INPUT", "an order id looks like #W1234567");
    const orderId = `#${(match[1] as string).toUpperCase()}`;
    let state = initial;
    const chat = c.req.query("session");
    const session = chat !== undefined && SESSION_ID.test(chat) ? chats.engineSession(chat) : undefined;
    if (session !== undefined) {
      try {
        state = (await engine.state(session)) as RetailState;
      } catch {
        state = initial;
      }
    }
    const order = Object.hasOwn(state.orders, orderId) ? state.orders[orderId] : undefined;
    if (!order) return apiError(c, 404, "NOT_FOUND", `no order ${orderId}`);
    const paid = order.payment_history
      .filter((payment) => payment.transaction_type === "payment")
      .reduce((sum, payment) => sum + payment.amount, 0);
    return c.json({
      order_id: order.order_id,
      status: order.status,
      items: order.items.map((item) => ({
        name: item.name,
        product_id: item.product_id,
        item_id: item.item_id,
        price: item.price,
        options: item.options,
      })),
      tracking: order.fulfillments.flatMap((fulfillment) => fulfillment.tracking_id),
      ship_to: { city: order.address.city, state: order.address.state, country: order.address.country },
      paid: Math.round(paid * 100) / 100,
      ...(order.cancel_reason ? { cancel_reason: order.cancel_reason } : {}),
      ...(order.return_items ? { return_items: order.return_items } : {}),
      ...(order.exchange_items ? { exchange_items: order.exchange_items } : {}),
    });
  });

  app.post("/api/chat", async (c) => {
    const declared = Number(c.req.header("content-length") ?? "0");
    if (declared > MAX_CHAT_BODY_BYTES)
      return apiError(c, 413, "BODY_TOO_LARGE", `the body is larger than ${MAX_CHAT_BODY_BYTES} bytes`);
    const type = (c.req.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
    if (type !== "application/json")
      return apiError(c, 415, "UNSUPPORTED_MEDIA_TYPE", "send the message as application/json");
    const raw = c.req.raw.body;
    if (!raw) return apiError(c, 400, "INVALID_INPUT", 'the body is empty; send {"message": "..."}');
    const text = await readLimited(raw, MAX_CHAT_BODY_BYTES, MAX_CHAT_BODY_BYTES * 4);
    if (text === "too-large")
      return apiError(c, 413, "BODY_TOO_LARGE", `the body is larger than ${MAX_CHAT_BODY_BYTES} bytes`);
    if (text === "not-utf8") return apiError(c, 400, "INVALID_INPUT", "the body is not UTF-8 text");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return apiError(c, 400, "INVALID_INPUT", "the body is not JSON");
    }
    const parsed = ChatRequest.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
      return apiError(c, 400, "INVALID_INPUT", `${where}${issue?.message ?? "invalid body"}`);
    }
    const { sessionId, message } = parsed.data;
    if (sessionId !== undefined && !chats.has(sessionId))
      return apiError(c, 404, "UNKNOWN_SESSION", `no chat session ${sessionId}; start a new one`);
    try {
      return c.json(await chats.send(sessionId, message));
    } catch (error) {
      const cause = error instanceof ChatTurnError ? error.cause : error;
      const known = error instanceof ChatTurnError ? { sessionId: error.sessionId } : {};
      if (cause instanceof TerrariumError && cause.code === "INVALID_INPUT")
        return apiError(c, 400, cause.code, cause.message, known);
      if (cause instanceof TerrariumError && cause.code === "UNKNOWN_SESSION")
        return apiError(c, 404, cause.code, cause.message);
      // Too many live chats, or the shop is stopping: a polite answer the widget shows as it is.
      if (
        cause instanceof TerrariumError &&
        (cause.code === "QUOTA_EXCEEDED" || cause.code === "SHUTTING_DOWN")
      )
        return apiError(c, 503, cause.code, cause.message, {}, { "retry-after": "60" });
      const reason = (cause as Error)?.message ?? String(cause);
      return apiError(c, 502, "AGENT_ERROR", `the agent could not answer: ${reason}`, known);
    }
  });

  app.get("/api/chat/:sessionId", (c) => {
    const id = c.req.param("sessionId");
    if (!SESSION_ID.test(id)) return apiError(c, 400, "INVALID_INPUT", "not a session id");
    const messages = chats.messages(id);
    if (!messages) return apiError(c, 404, "UNKNOWN_SESSION", `no chat session ${id}`);
    return c.json({ sessionId: id, messages });
  });

  // The widget's "new conversation" button: the chat and its engine session end now.
  app.delete("/api/chat/:sessionId", async (c) => {
    const id = c.req.param("sessionId");
    if (!SESSION_ID.test(id)) return apiError(c, 400, "INVALID_INPUT", "not a session id");
    if (!(await chats.end(id))) return apiError(c, 404, "UNKNOWN_SESSION", `no chat session ${id}`);
    return c.body(null, 204, { "cache-control": "no-store" });
  });

  app.all("/api/*", (c) => apiError(c, 404, "NOT_FOUND", `no route ${c.req.method} ${c.req.path}`));

  app.on(["GET", "HEAD"], "*", async (c) => {
    const found = lookupStatic(root, new URL(c.req.url).pathname);
    if (found.kind === "refused") return apiError(c, 400, "PATH_REFUSED", found.reason);
    if (found.kind === "missing") return c.text("not found", 404, { "x-content-type-options": "nosniff" });
    return staticResponse(found, c.req.method);
  });
  app.all("*", (c) =>
    c.text(`${c.req.method} is not allowed here`, 405, {
      allow: "GET, HEAD",
      "x-content-type-options": "nosniff",
    }),
  );
  return app;
}
