import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type Context, Hono } from "hono";
import { z } from "zod";
import { TerrariumError } from "../../core/errors.js";
import { loadConfig } from "../../models/config.js";
import { Models } from "../../models/hub.js";
import { createApp } from "../../server/app.js";
import { readLimited } from "../../server/http.js";
import { buildEngine } from "../../server/start.js";
import type { Engine } from "../../sim/engine.js";
import { PlannerTarget } from "../agents/planner.js";
import { DEFAULT_MAX_TOOL_STEPS, DEFAULT_TIMEOUT_MS } from "../agents/shared.js";
import { ChatSessions, ChatTurnError, MAX_MESSAGE_CHARS } from "./chat.js";
import { lookupStatic, shopFolder, staticResponse } from "./static.js";

/** The environment behind the shop and its agent. */
export const SHOP_ENVIRONMENT = "tau2-retail";
/** Where terrarium's own API (sessions, history, state, tools) is mounted. */
export const TERRARIUM_PREFIX = "/terrarium";
/** Largest body of POST /api/chat. */
export const MAX_CHAT_BODY_BYTES = 16 * 1024;

export interface ShopDemoOptions {
  /** Port on 127.0.0.1; 0 picks a free one (default 8090). */
  port?: number;
  host?: "127.0.0.1";
  /** The planner agent's model (`provider:model`); else roles.agent, else roles.default, else scripted. */
  agentModel?: string;
  /** Models to use (their config and ledger); otherwise built from `config`. The caller closes them. */
  models?: Models;
  /** terrarium.config.yaml to read when `models` is not given. */
  config?: string;
  /** Seeds the engine (session ids, clocks) and the planner's model calls. */
  seed?: string;
  /** Conversations kept in memory (default 500). */
  maxChatSessions?: number;
}

export interface ShopDemo {
  /** Base URL, ending with `/`. */
  url: string;
  /** `scripted` without a model, else `planner`. */
  mode: "scripted" | "planner";
  /** The planner's model, when there is one. */
  agentModel?: string;
  engine: Engine;
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

const ORDER_ID = /^#?(W\d{7})$/i;
const PRODUCT_ID = /^\d{1,20}$/;
const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** An error answer; `extra` adds fields beside `error` (the chat session a failed turn belongs to). */
const apiError = (
  c: Context,
  status: 400 | 404 | 405 | 413 | 415 | 502,
  code: string,
  message: string,
  extra: Record<string, unknown> = {},
) =>
  c.json({ error: { code, message }, ...extra }, status, {
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
  });

/**
 * The demo shop: its pages (examples/shop), a JSON API over the tau2-retail store, the chat agent
 * (terrarium's planner with a model, scripted rules without), and terrarium's own API under /terrarium
 * so the agent's tool calls can be read per chat session (`/terrarium/sessions/{id}/history`).
 */
export async function startShopDemo(options: ShopDemoOptions = {}): Promise<ShopDemo> {
  const host = options.host ?? "127.0.0.1";
  if (host !== "127.0.0.1")
    throw new TerrariumError("INVALID_INPUT", `the demo shop listens on 127.0.0.1 only (got ${host})`);
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
  const initial = (await built.environment?.initialState()) as RetailState;
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
    {
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
      ...(options.maxChatSessions !== undefined ? { maxSessions: options.maxChatSessions } : {}),
    },
  );
  const terrarium = createApp(engine, {
    profile: built.profile,
    apiNames: built.apiNames,
    usage: built.usage,
  });
  const app = shopApp({ root, engine, initial, chats, terrarium, agentModel });

  const shutdown = async () => {
    await chats.close();
    await engine.close();
    await closeModels();
  };
  return new Promise<ShopDemo>((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port, hostname: host }, (info: AddressInfo) => {
      server.off("error", failed);
      resolve({
        url: `http://${host}:${info.port}/`,
        mode: chats.mode,
        ...(agentModel !== undefined ? { agentModel } : {}),
        engine,
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
  terrarium: { fetch: (request: Request) => Response | Promise<Response> };
  agentModel: string | undefined;
}

/** The shop's routes (exported for tests that need no socket). */
export function shopApp(parts: ShopAppParts): Hono {
  const { root, engine, initial, chats, terrarium } = parts;
  const app = new Hono();

  // terrarium's API, as `terrarium serve` answers it, with the prefix taken off the path.
  const forward = (c: Context) => {
    const url = new URL(c.req.url);
    url.pathname = url.pathname.slice(TERRARIUM_PREFIX.length) || "/";
    const raw = c.req.raw;
    const init: RequestInit & { duplex?: "half" } = { method: raw.method, headers: raw.headers };
    if (raw.body && raw.method !== "GET" && raw.method !== "HEAD") {
      init.body = raw.body;
      init.duplex = "half";
    }
    return terrarium.fetch(new Request(url, init));
  };
  app.all(TERRARIUM_PREFIX, forward);
  app.all(`${TERRARIUM_PREFIX}/*`, forward);

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
    const session = c.req.query("session");
    if (session !== undefined && SESSION_ID.test(session)) {
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
