import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/**
 * Graceful shutdown: the requests a server is answering, and waiting for them to finish. `HttpDrain`
 * counts requests at the HTTP server (from the request until its response is written out, which is later
 * than the app's handler returning), and the connections whose request is not read yet. Once draining
 * starts, the app refuses requests that arrive on connections still open with 503 (a load balancer retries
 * them on another replica) and its answers carry `Connection: close`, so no client reuses a connection of
 * a server that is going away.
 */
export class Drain {
  private active = 0;
  private draining = false;
  private cut = false;
  private waiters: Array<{ settled: () => boolean; done: () => void }> = [];

  /** Requests being answered now. */
  get inFlight(): number {
    return this.active;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /** A request arrived. */
  begin(): void {
    this.active++;
  }

  /** A request's response has been written out (or its connection was lost). */
  end(): void {
    this.active = Math.max(0, this.active - 1);
    this.check();
  }

  /** From now on, new requests are refused. */
  start(): void {
    this.draining = true;
  }

  /**
   * Resolves true once nothing is left to wait for (no request in flight, or `settled` says so), or false
   * when `timeoutMs` passes first (or `cutShort` is called, even before this). Starts draining.
   */
  wait(timeoutMs: number, settled: () => boolean = () => this.active === 0): Promise<boolean> {
    this.start();
    if (settled() || this.cut) return Promise.resolve(settled());
    return new Promise<boolean>((resolve) => {
      const waiter = { settled, done: () => {} };
      const timer = setTimeout(
        () => {
          this.waiters = this.waiters.filter((other) => other !== waiter);
          resolve(settled());
        },
        Math.max(0, timeoutMs),
      );
      waiter.done = () => {
        clearTimeout(timer);
        resolve(settled());
      };
      this.waiters.push(waiter);
    });
  }

  /** Something changed (a connection closed, a request began): waiters whose condition holds resolve. */
  check(): void {
    for (const waiter of [...this.waiters])
      if (waiter.settled()) {
        this.waiters = this.waiters.filter((other) => other !== waiter);
        waiter.done();
      }
  }

  /** Stops waiting now (a second signal): `wait` resolves with whether anything is still in flight. */
  cutShort(): void {
    this.cut = true;
    for (const waiter of this.waiters.splice(0)) waiter.done();
  }
}

/** What a shutdown did. */
export interface ShutdownReport {
  /** Requests in flight when shutdown began. */
  inFlight: number;
  /** Requests still unanswered when the drain timeout passed (their connections were closed). */
  abandoned: number;
}

/** serve's default `--drain-timeout`, in seconds. */
export const DEFAULT_DRAIN_TIMEOUT_SECONDS = 10;

/**
 * serve's default `--keep-alive-timeout`, in seconds: above the idle timeouts of common load balancers
 * (AWS ALB 60 s, GCP 600 s is configured on the backend instead, nginx upstream keepalive_timeout 60 s), so
 * the balancer, not terrarium, closes an idle connection; otherwise it may send a request on a connection
 * terrarium is closing at that moment and answer its client 502.
 */
export const DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS = 65;

/** Longest `--keep-alive-timeout` accepted, in seconds. */
export const MAX_KEEP_ALIVE_TIMEOUT_SECONDS = 3600;

/**
 * How long a connection accepted but silent (no request read from it yet) is kept open once draining
 * starts, in ms: a client connects in order to send a request, which is answered (503) when it comes.
 */
export const FIRST_REQUEST_GRACE_MS = 2000;

/** Node's default `requestTimeout` (the whole request, headers and body), kept unless headers need more. */
const NODE_REQUEST_TIMEOUT_MS = 300_000;

/**
 * Sets an HTTP server's idle keep-alive timeout, with `headersTimeout` just above it (a request's headers
 * may take that long only after a connection sat idle, never less than the idle time itself) and
 * `requestTimeout` at least as long as the headers' (Node refuses less).
 */
export function setKeepAlive(server: Server, keepAliveTimeoutMs: number): void {
  server.keepAliveTimeout = keepAliveTimeoutMs;
  server.headersTimeout = keepAliveTimeoutMs + 1000;
  server.requestTimeout = Math.max(NODE_REQUEST_TIMEOUT_MS, server.headersTimeout + 1000);
}

/** What a shutdown did, in detail (`close`'s `progress` gets it in two steps). */
export interface ShutdownProgress {
  /** `listening-stopped`: the listener is closed (what was waiting to be accepted was accepted first). */
  stage: "listening-stopped" | "drained";
  /** Requests that began before draining and are still being answered. */
  inFlight: number;
  /**
   * Requests that reached the server after draining began: read since (answered 503, or being answered),
   * or waiting in connections accepted whose first request is not read yet.
   */
  arriving: number;
  /** Since draining started: requests answered (they had begun before, or are probes). */
  answered: number;
  /** Since draining started: requests refused with 503 SHUTTING_DOWN. */
  refused: number;
  /** Requests still running at the drain timeout (or a second signal): their connections were closed. */
  cutOff: number;
  /** Requests whose client went away before its answer. */
  lost: number;
  /** Connections closed without a request on them: idle keep-alive ones, silent ones past the grace. */
  closedIdle: number;
}

interface ConnectionState {
  /** Requests on it being answered. */
  active: number;
  /** Requests on it answered (or lost). */
  served: number;
}

/**
 * An HTTP server's connections and requests, and its graceful shutdown. Requests are counted from the
 * moment they are read, connections from the moment they are accepted: under load a connection may sit
 * accepted (or in the kernel's accept queue) for a while before its request is read, and such a request
 * reached the server as much as one already running. Shutdown therefore
 *
 * 1. starts draining (the app answers new requests 503 SHUTTING_DOWN with `Connection: close`);
 * 2. keeps accepting until an event-loop turn accepts nothing new, so the accept queue is emptied rather
 *    than reset by closing the listener, then closes the listener;
 * 3. keeps every accepted connection until its request is read and answered: connections that never sent
 *    a request get `FIRST_REQUEST_GRACE_MS`, idle keep-alive ones are closed once any request already in
 *    their socket would have been read (an event-loop turn), the others until the drain timeout;
 * 4. at the drain timeout closes what is left (those requests are cut off: a call may be half done, so
 *    it cannot be answered as refused).
 */
export class HttpDrain {
  readonly drain: Drain;
  private readonly server: Server;
  private readonly sockets = new Map<Socket, ConnectionState>();
  private accepted = 0;
  /** Requests that began before draining, still running. */
  private early = 0;
  /** Requests that began while draining. */
  private late = 0;
  private graceOver = false;
  private stopping = false;
  private counts = { answered: 0, refused: 0, cutOff: 0, lost: 0, closedIdle: 0 };

  constructor(server: Server, drain: Drain) {
    this.server = server;
    this.drain = drain;
    server.on("connection", (socket: Socket) => {
      this.accepted++;
      this.sockets.set(socket, { active: 0, served: 0 });
      socket.once("close", () => {
        this.sockets.delete(socket);
        this.drain.check();
      });
    });
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      const state = this.sockets.get(request.socket);
      const beganDraining = this.drain.isDraining;
      if (beganDraining) this.late++;
      else this.early++;
      if (state) state.active++;
      this.drain.begin();
      response.once("close", () => {
        if (state) {
          state.active--;
          state.served++;
        }
        if (!beganDraining) this.early--;
        if (this.drain.isDraining && !this.stopping) {
          if (!response.writableFinished) this.counts.lost++;
          else if (beganDraining && response.statusCode === 503) this.counts.refused++;
          else this.counts.answered++;
        }
        this.drain.end();
      });
    });
  }

  /** Connections accepted whose first request has not been read. */
  private unread(): Socket[] {
    return [...this.sockets].filter(([, state]) => state.active === 0 && state.served === 0).map(([s]) => s);
  }

  /** Nothing left to wait for: no request running, and no silent connection within its grace. */
  private settled(): boolean {
    return this.drain.inFlight === 0 && (this.graceOver || this.unread().length === 0);
  }

  private progress(stage: ShutdownProgress["stage"]): ShutdownProgress {
    return { stage, inFlight: this.early, arriving: this.late + this.unread().length, ...this.counts };
  }

  /** Closes the connections where no request is running and none has been read yet (see `shutdown`). */
  private closeIdle(which: "keep-alive" | "all"): void {
    for (const [socket, state] of this.sockets)
      if (state.active === 0 && (which === "all" || state.served > 0) && !ending(socket)) {
        this.counts.closedIdle++;
        socket.destroy();
      }
  }

  /**
   * Drains and closes the server (see the class). `reportStart` runs once the listener is closed, with
   * what is in flight then. Resolves once every connection is closed.
   */
  async shutdown(
    drainTimeoutMs: number,
    reportStart?: (progress: ShutdownProgress) => void,
  ): Promise<{ drained: boolean; atStart: number; progress: ShutdownProgress }> {
    const deadline = Date.now() + drainTimeoutMs;
    this.drain.start();
    // Accept what is queued: libuv accepts every pending connection when the listener is polled, so a
    // turn that accepts nothing means the queue is empty (bounded, in case connections keep coming).
    for (let turn = 0; turn < 50; turn++) {
      const before = this.accepted;
      await nextTurn();
      await nextTurn();
      if (this.accepted === before) break;
    }
    // http.Server#close would also close idle connections at once, those whose request is in the socket
    // but not read yet among them (their clients would see a reset): only the listener is closed here.
    const closeIdleConnections = this.server.closeIdleConnections;
    this.server.closeIdleConnections = () => {};
    const closed = new Promise<void>((done) => this.server.close(() => done()));
    this.server.closeIdleConnections = closeIdleConnections;
    const atStart = this.early;
    reportStart?.(this.progress("listening-stopped"));
    // Requests already in the sockets are read in the next poll phase; what is still idle after it is not
    // sending anything now.
    await nextTurn();
    await nextTurn();
    this.closeIdle("keep-alive");
    const graceMs = Math.min(FIRST_REQUEST_GRACE_MS, Math.max(0, deadline - Date.now()));
    const grace = setTimeout(() => {
      // A timer can fire before the poll phase reads what arrived meanwhile: decide after it.
      setImmediate(() => {
        this.graceOver = true;
        this.closeIdle("all");
        this.drain.check();
      });
    }, graceMs);
    const drained = await this.drain.wait(Math.max(0, deadline - Date.now()), () => this.settled());
    clearTimeout(grace);
    this.counts.cutOff = drained ? 0 : this.drain.inFlight;
    this.stopping = true;
    // Connections still silent (the drain timeout was shorter than the grace, or a second signal) are
    // closed with the rest; they count as idle, not as cut-off requests.
    for (const [socket, state] of this.sockets)
      if (state.active === 0 && !ending(socket)) this.counts.closedIdle++;
    const progress = this.progress("drained");
    for (const socket of this.sockets.keys()) socket.destroy();
    this.server.closeAllConnections?.();
    await closed;
    return { drained, atStart, progress };
  }
}

/** Closed or closing already (after a `Connection: close` answer, or by us). */
function ending(socket: Socket): boolean {
  return socket.destroyed || socket.writableEnded;
}

/** Resolves in the check phase of the event loop's next turn (after its poll phase). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
