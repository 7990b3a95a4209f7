import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { TerrariumError } from "../core/errors.js";
import { hashToken } from "../core/token-hash.js";
import type { Engine } from "../sim/engine.js";
import { type BodyText, readLimited } from "./http.js";
import { errorCodeOf, type ServerMetrics } from "./metrics.js";
import type { Drain } from "./shutdown.js";
import { sessionCall, sessionState } from "./terrarium-routes.js";
import { endHttpSpan, startNodeHttpSpan, tracingEnabled, withSpanContext } from "./tracing.js";

/**
 * The server's fast path: `POST /sessions/{id}/calls`, the route an agent or a trainer calls in a loop,
 * and `GET /sessions/{id}/state`, answered straight on Node's request and response, without Hono and
 * without web `Request`/`Response` objects (which, with the adapter between them and Node, cost more than
 * the route itself). It answers exactly as the app does (app.ts): the same request id, token and owner
 * checks, body limits, errors, metrics, spans and drain behaviour, through the same `sessionCall` and
 * `sessionState` as the routes. Anything it is not sure to answer alike it leaves to the app before
 * reading a byte of the body: other routes and methods (HEAD too), paths that need decoding or
 * normalising, unusual Host headers, refused tokens, declared bodies over the limit, and every request
 * once the server drains.
 */
export type FastPath = (request: IncomingMessage, response: ServerResponse) => boolean;

/** What the fast path needs of the app (createApp builds it from its own options and answers). */
export interface FastPathOptions {
  engine: Engine;
  metrics: ServerMetrics;
  /** Hashes of the accepted tokens (empty: an open server). */
  tokens: ReadonlySet<string>;
  maxBody: number;
  /** Past `maxBody`, how many more bytes are read and dropped before a 413. */
  drainLimit: number;
  maxDepth: number;
  drain: Drain | undefined;
  /** The app's answer to an error of a terrarium route (its 500s are logged under the request id). */
  answer: (error: unknown, requestId: string, request: string) => Response;
  /** The app's 413. */
  tooLarge: () => Response;
  /** The code an error answer was given, when the app recorded one (else metrics read it from the body). */
  answeredCode: (response: Response) => string | undefined;
}

/**
 * A route the fast path answers: its method, the paths it takes (as they are: no percent-encoding, dot
 * segment, query or trailing slash to interpret), its template (as metrics and spans name it), and what
 * it answers once the body (when it reads one) is in.
 */
interface FastRoute {
  method: "GET" | "POST";
  path: RegExp;
  template: string;
  run: (owner: string | undefined, id: string, body: BodyText) => Promise<unknown>;
}
/** Host headers node-server takes as they are (others it parses, and may refuse). */
const PLAIN_HOST = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;
/** A request id a client may choose: short, printable, nothing a log line could be broken with. */
export const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
const BEARER = /^Bearer\s+(.+)$/i;

const FAST_PATHS = new WeakMap<object, FastPath>();

let taken = 0;
/** How many requests fast paths of this process have taken (tests check the path they mean to test). */
export function fastPathTaken(): number {
  return taken;
}

/** Records the fast path of an app (createApp does). */
export function setFastPath(app: object, fastPath: FastPath): void {
  FAST_PATHS.set(app, fastPath);
}

/**
 * `createServer` for node-server's `serve`: the app's fast path first, its listener (Hono) for the rest.
 * TERRARIUM_HTTP_FAST_PATH=0 leaves everything to Hono (to compare the two).
 */
export function withFastPath(app: object): typeof createServer {
  const setting = process.env.TERRARIUM_HTTP_FAST_PATH?.trim() ?? "";
  if (!["", "0", "1"].includes(setting))
    throw new TerrariumError(
      "CONFIG_INVALID",
      `TERRARIUM_HTTP_FAST_PATH must be 0 (everything through Hono) or 1 (the default), got "${setting}"`,
    );
  const fast = setting === "0" ? undefined : FAST_PATHS.get(app);
  return ((options: object, listener: (request: IncomingMessage, response: ServerResponse) => void): Server =>
    createServer(
      options,
      fast
        ? (request, response) => {
            if (!fast(request, response)) listener(request, response);
          }
        : listener,
    )) as typeof createServer;
}

/**
 * The headers the fast path reads, in one pass over the raw headers, each as the app reads it through
 * node-server: every occurrence joined with ", " (Node's own `headers` keeps only the first Authorization
 * or Content-Type). Node has trimmed the values already.
 */
interface Wanted {
  "x-request-id"?: string;
  "content-type"?: string;
  "content-length"?: string;
  "transfer-encoding"?: string;
  authorization?: string;
  "x-session-id"?: string;
}

function wantedHeaders(raw: string[]): Wanted {
  const found: Wanted = {};
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i] as string;
    // Only names of these lengths can be wanted: the others are not lower-cased.
    const length = key.length;
    if (length !== 12 && length !== 13 && length !== 14 && length !== 17) continue;
    const name = key.toLowerCase();
    if (
      name !== "x-request-id" &&
      name !== "x-session-id" &&
      name !== "content-type" &&
      name !== "content-length" &&
      name !== "transfer-encoding" &&
      name !== "authorization"
    )
      continue;
    const value = raw[i + 1] as string;
    const before = found[name];
    found[name] = before === undefined ? value : `${before}, ${value}`;
  }
  return found;
}

/**
 * The 200 answers of one event-loop turn, written together when the turn ends (`setImmediate`). Under
 * load the server is the busy side and each client sleeps until its answer arrives: a write that wakes a
 * sleeping process costs the writer several times what the write itself does (about 46 of the 180 µs of
 * server CPU a bank transfer took, against 7 µs for the same write by an echo server whose clients are
 * awake). Written back to back, only the first answer of a turn finds the client asleep. An answer waits
 * at most for the rest of its turn (work already received), and the drain still counts it until it is out.
 */
export class AnswerBatch {
  private readonly pending: { response: ServerResponse; requestId: string; text: string }[] = [];

  constructor(private readonly drain: Drain | undefined) {}

  add(response: ServerResponse, requestId: string, text: string): void {
    if (this.pending.push({ response, requestId, text }) === 1) setImmediate(this.flush);
  }

  /** Writes every pending answer (a bound property: one function for every turn). */
  private readonly flush = (): void => {
    // Read at the write: a drain that began during the turn already closes these connections.
    const closing = this.drain?.isDraining === true;
    for (const { response, requestId, text } of this.pending.splice(0)) {
      // One flat array, in the order the headers always went out (node writes it as it is).
      const headers = [
        "content-type",
        "application/json",
        "x-request-id",
        requestId,
        "Content-Length",
        String(Buffer.byteLength(text)),
      ];
      if (closing) headers.push("connection", "close");
      try {
        response.writeHead(200, headers);
        response.end(text);
      } catch {
        // Only a client that is gone makes the write fail: nothing to answer, the others still go out.
        if (!response.headersSent) response.destroy();
      }
    }
  };
}

export function createFastPath(options: FastPathOptions): FastPath {
  const { engine, metrics, tokens, maxBody, drainLimit, maxDepth } = options;
  const answers = new AnswerBatch(options.drain);
  const calls: FastRoute = {
    method: "POST",
    path: /^\/sessions\/([A-Za-z0-9_-]{1,200})\/calls$/,
    template: "/sessions/{id}/calls",
    run: (owner, id, body) => sessionCall(engine, owner, id, body),
  };
  const state: FastRoute = {
    method: "GET",
    path: /^\/sessions\/([A-Za-z0-9_-]{1,200})\/state$/,
    template: "/sessions/{id}/state",
    run: (owner, id) => sessionState(engine, owner, id),
  };

  /**
   * The route's answer as JSON text, or the app's answer (an error, a 413) as a Response; `progress.dispatched`
   * says whether the route ran (a body too large, or one that could not be read, never reaches it). Made once,
   * not per request: a closure per request costs an allocation (and, under tsx, a name definition).
   */
  const runRoute = async (
    route: FastRoute,
    request: IncomingMessage,
    id: string,
    owner: string | undefined,
    sent: Wanted,
    requestId: string,
    progress: { dispatched: boolean },
  ): Promise<string | Response> => {
    // GET has no body (the app reads none either).
    const read = route.method === "GET" ? undefined : await readLimited(request, maxBody, drainLimit);
    if (read === "too-large") return options.tooLarge();
    progress.dispatched = true;
    try {
      const value = await route.run(owner, id, {
        text: read === "not-utf8" ? undefined : read,
        error: read === "not-utf8" ? "the body is not UTF-8 text" : undefined,
        contentType: sent["content-type"] ?? "",
        maxDepth,
      });
      return JSON.stringify(value);
    } catch (error) {
      return options.answer(error, requestId, `${route.method} ${route.template}`);
    }
  };

  const answerRoute = async (
    route: FastRoute,
    request: IncomingMessage,
    response: ServerResponse,
    id: string,
    owner: string | undefined,
    sent: Wanted,
  ): Promise<void> => {
    const started = performance.now();
    const given = sent["x-request-id"];
    const requestId = given !== undefined && REQUEST_ID.test(given) ? given : randomUUID();
    const { method, template } = route;
    metrics.requestsInFlight(1);
    const traced = tracingEnabled()
      ? startNodeHttpSpan(method, request.url as string, request.headers)
      : undefined;
    const progress = { dispatched: false };
    // The answer as JSON text, or the app's answer (an error, a 413) as a Response.
    let answer: string | Response;
    try {
      answer = traced
        ? await withSpanContext(traced.context, () =>
            runRoute(route, request, id, owner, sent, requestId, progress),
          )
        : await runRoute(route, request, id, owner, sent, requestId, progress);
    } catch (error) {
      // The body could not be read (the client went away): the app's error handler answers it.
      answer = options.answer(error, requestId, `${method} ${template}`);
    }
    metrics.requestsInFlight(-1);
    if (typeof answer === "string") {
      metrics.observeHttpOk(method, template, (performance.now() - started) / 1000);
      if (traced) endHttpSpan(traced.span, method, template, 200, id);
      answers.add(response, requestId, answer);
      return;
    }
    const status = answer.status;
    let code: string | undefined;
    // node-server writes a Response whose body was read for its code (cloned) with a lower-case header.
    let lengthName = "Content-Length";
    if (status >= 400) {
      code = options.answeredCode(answer);
      if (code === undefined) {
        code = await errorCodeOf(answer);
        lengthName = "content-length";
      }
    }
    metrics.observeHttp({
      method,
      route: template,
      status,
      seconds: (performance.now() - started) / 1000,
      ...(code !== undefined ? { code } : {}),
    });
    if (traced) {
      const session = progress.dispatched ? id : sent["x-session-id"]?.slice(0, 200);
      endHttpSpan(traced.span, method, template, status, session);
    }
    const closing = options.drain?.isDraining === true;
    const headers: Record<string, string | number> = {};
    answer.headers.forEach((value, key) => {
      headers[key] = value;
    });
    headers["x-request-id"] = requestId;
    if (closing) headers.connection = "close";
    const text = await answer.text();
    headers[lengthName] = Buffer.byteLength(text);
    response.writeHead(status, headers);
    response.end(text);
  };

  return (request, response) => {
    const route = request.method === "POST" ? calls : request.method === "GET" ? state : undefined;
    if (!route) return false;
    const match = route.path.exec(request.url ?? "");
    if (!match || options.drain?.isDraining) return false;
    if (!PLAIN_HOST.test(request.headers.host ?? "")) return false;
    const headers = wantedHeaders(request.rawHeaders);
    const declared = headers["content-length"];
    if (declared !== undefined && Number(declared) > maxBody && !headers["transfer-encoding"]) return false;
    let owner: string | undefined;
    if (tokens.size > 0) {
      const token = BEARER.exec(headers.authorization ?? "")?.[1]?.trim();
      const hash = token ? hashToken(token) : undefined;
      owner = hash && tokens.has(hash) ? hash : undefined;
      // The app answers the 401 (and reads the body away first).
      if (!owner) return false;
    }
    taken++;
    answerRoute(route, request, response, match[1] as string, owner, headers).catch(() => {
      // Only writing the answer can fail here, when the client is gone: nothing to answer.
      if (!response.headersSent) response.destroy();
    });
    return true;
  };
}
