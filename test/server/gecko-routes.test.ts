import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/server/app.js";
import { startServer } from "../../src/server/index.js";
import { toolFixture } from "../helpers/paths.js";

/**
 * docs/server.md's route table is the contract: this file reads it and checks every row against a running
 * server (the route exists with that method, its request is what the route reads, each documented status
 * happens with a body of the documented shape), and checks that /openapi.json lists exactly the routes the
 * server answers and the docs table lists exactly its non-tool routes.
 */
const ROOT = join(import.meta.dirname, "..", "..");
const DOC = readFileSync(join(ROOT, "docs", "server.md"), "utf8");

let pets: Awaited<ReturnType<typeof startServer>>;
let failing: Awaited<ReturnType<typeof startServer>>;
/** The pets engine behind an app whose one extra readiness check fails: GET /readyz answers 503. */
let notReady: { url: string; close: () => void };
beforeAll(async () => {
  pets = await startServer({ sources: [toolFixture("petstore.openapi.yaml")], port: 0, seed: "1" });
  // Every call forwarded to a port nobody listens on: the simulator fails, which tool routes answer 500.
  failing = await startServer({
    sources: [toolFixture("petstore.openapi.yaml")],
    port: 0,
    seed: "1",
    simulator: "proxy",
    proxy: "http://127.0.0.1:9",
  });
});
beforeAll(async () => {
  const app = createApp(pets.engine, {
    readiness: [{ name: "queue", check: () => Promise.reject(new Error("no queue here")) }],
    log: () => undefined,
  });
  notReady = await new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) =>
      resolve({ url: `http://127.0.0.1:${info.port}`, close: () => server.close() }),
    );
  });
});
afterAll(async () => {
  notReady?.close();
  await Promise.all([pets?.close(), failing?.close()]);
});

// --- the docs table --------------------------------------------------------------------------------------

type Shape =
  | { kind: "object"; entries: Array<{ key: string; optional: boolean; shape?: Shape }>; open: boolean }
  | { kind: "array"; item: Shape }
  | { kind: "word"; word: string };

interface DocRow {
  method: string;
  path: string;
  headers: string[];
  body?: Shape;
  query: string[];
  responses: Array<{ status: number; shape: Shape }>;
  gecko: string;
}

/** `{a, b?, c: {…}}`, `[x]`, a word (`state`, `any`, `html`, `—`). */
function parseShape(text: string): Shape {
  let at = 0;
  const skip = () => {
    while (text[at] === " ") at++;
  };
  const shape = (): Shape => {
    skip();
    if (text[at] === "{") {
      at++;
      const entries: Array<{ key: string; optional: boolean; shape?: Shape }> = [];
      let open = false;
      for (;;) {
        skip();
        if (text[at] === "}") {
          at++;
          return { kind: "object", entries, open };
        }
        if (text[at] === "…") {
          at++;
          open = true;
        } else {
          const key = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(at))?.[0];
          if (!key) throw new Error(`bad shape at ${at}: ${text}`);
          at += key.length;
          const optional = text[at] === "?";
          if (optional) at++;
          skip();
          let inner: Shape | undefined;
          if (text[at] === ":") {
            at++;
            inner = shape();
          }
          entries.push({ key, optional, ...(inner ? { shape: inner } : {}) });
        }
        skip();
        if (text[at] === ",") at++;
      }
    }
    if (text[at] === "[") {
      at++;
      const item = shape();
      skip();
      if (text[at++] !== "]") throw new Error(`bad shape: ${text}`);
      return { kind: "array", item };
    }
    const word = /^(—|[a-z]+)/.exec(text.slice(at))?.[0];
    if (!word) throw new Error(`bad shape at ${at}: ${text}`);
    at += word.length;
    return { kind: "word", word };
  };
  const parsed = shape();
  skip();
  if (at !== text.length) throw new Error(`trailing text in shape: ${text}`);
  return parsed;
}

function parseTable(markdown: string): DocRow[] {
  const section = markdown.slice(markdown.indexOf("## Routes"));
  const lines = section.split("\n").filter((line) => line.startsWith("| `"));
  return lines.map((line) => {
    const cells = line
      .slice(1, -1)
      .split(" | ")
      .map((cell) => cell.trim());
    const [route, request, response, gecko] = cells as [string, string, string, string];
    const [method, path] = (/^`(\S+) (\S+)`$/.exec(route) ?? []).slice(1) as [string, string];
    const body = /body `([^`]+)`/.exec(request)?.[1];
    const query = /query ((?:`[^`]+`(?:, )?)+)/.exec(request)?.[1];
    return {
      method,
      path,
      headers: ["X-Session-ID", "Mcp-Session-Id"].filter((name) => request.includes(`\`${name}\``)),
      ...(body ? { body: parseShape(body) } : {}),
      query: query ? [...query.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string) : [],
      responses: [...response.matchAll(/`(\d{3}) ([^`]+)`/g)].map((m) => ({
        status: Number(m[1]),
        shape: parseShape(m[2] as string),
      })),
      gecko,
    };
  });
}

/** Problems of a value against a shape ([] when it fits). */
function misfits(value: unknown, shape: Shape, where = "body"): string[] {
  if (shape.kind === "word") {
    switch (shape.word) {
      case "any":
        return [];
      case "state":
        return isObject(value) ? [] : [`${where} is not a state object`];
      case "html":
        return typeof value === "string" && value.startsWith("<!doctype html>")
          ? []
          : [`${where} is not HTML`];
      case "—":
        return value === "" ? [] : [`${where} is not empty`];
      case "text":
        // Prometheus' text format: comment lines and samples (`name{labels} value`).
        return typeof value === "string" &&
          /^# HELP \w+ /m.test(value) &&
          /^\w+(\{[^}]*\})? \S+$/m.test(value)
          ? []
          : [`${where} is not Prometheus text`];
      default:
        throw new Error(`unknown shape word ${shape.word}`);
    }
  }
  if (shape.kind === "array") {
    if (!Array.isArray(value)) return [`${where} is not a list`];
    return value.flatMap((item, i) => misfits(item, shape.item, `${where}[${i}]`));
  }
  if (!isObject(value)) return [`${where} is not an object: ${JSON.stringify(value)?.slice(0, 80)}`];
  const problems: string[] = [];
  const declared = new Set(shape.entries.map((entry) => entry.key));
  for (const entry of shape.entries) {
    if (!(entry.key in value)) {
      if (!entry.optional) problems.push(`${where}.${entry.key} is missing`);
    } else if (entry.shape) {
      problems.push(...misfits(value[entry.key], entry.shape, `${where}.${entry.key}`));
    }
  }
  if (!shape.open)
    for (const key of Object.keys(value))
      if (!declared.has(key)) problems.push(`${where}.${key} is not documented`);
  return problems;
}

/** A `$ref` to `#/components/<kind>/<name>` replaced by what it names. */
function componentOf(document: any, value: any): any {
  const target = value?.$ref;
  if (typeof target !== "string" || !target.startsWith("#/components/")) return value;
  const [kind, name] = target.slice("#/components/".length).split("/");
  return document.components[kind as string][name as string];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

const ROWS = parseTable(DOC);
/** The rows that stand for every tool's routes, and the concrete petstore route each is checked on. */
const TOOL_ROWS: Record<string, { kind: string; method: string; path: string; concrete: string }> = {
  "{method} {path}": { kind: "path", method: "GET", path: "/pets/{petId}", concrete: "/pets/12" },
  "POST /{operationId}": {
    kind: "operationId",
    method: "POST",
    path: "/showPetById",
    concrete: "/showPetById",
  },
  "{method} /{api}{path}": {
    kind: "api-path",
    method: "GET",
    path: "/Petstore/pets/{petId}",
    concrete: "/Petstore/pets/12",
  },
  "POST /{api}/{operationId}": {
    kind: "api-operationId",
    method: "POST",
    path: "/Petstore/showPetById",
    concrete: "/Petstore/showPetById",
  },
};
const isToolRow = (row: DocRow) => `${row.method} ${row.path}` in TOOL_ROWS;

// --- requests ----------------------------------------------------------------------------------------------

interface Answer {
  status: number;
  text: string;
  body: unknown;
  headers: Headers;
}

async function send(
  base: string,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const response = await fetch(base + path, {
    method,
    headers: {
      ...(options.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(options.headers ?? {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  let body: unknown = text;
  if ((response.headers.get("content-type") ?? "").includes("json") && text !== "") body = JSON.parse(text);
  return { status: response.status, text, body, headers: response.headers };
}

interface Scenario {
  /** Defaults to the pets server. */
  base?: () => string;
  path: string | ((fresh: Fresh) => string);
  body?: unknown | ((fresh: Fresh) => unknown);
  /** Send X-Session-ID with a fresh session (or this value). */
  session?: boolean | string;
  headers?: (fresh: Fresh) => Record<string, string>;
  /** Runs first (a call, so histories are not empty). */
  before?: (fresh: Fresh) => Promise<void>;
  /** Open an MCP session first. */
  mcp?: boolean;
}

/** A new session for each scenario, so scenarios do not depend on each other. */
interface Fresh {
  id: string;
  mcp: string;
}

const MCP_INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "docs-test", version: "1" },
  },
};
const MCP_HEADERS = { accept: "application/json, text/event-stream" };

const callListPets = async (fresh: Fresh) => {
  await send(pets.url, "GET", "/pets?limit=2", { headers: { "x-session-id": fresh.id } });
};

/** One request per documented (route, status); the test checks that this list and the docs agree. */
const SCENARIOS: Record<string, Scenario> = {
  "GET /health 200": { path: "/health" },
  "POST /sessions 201": { path: "/sessions", body: { state: { pets: {} } } },
  "POST /sessions 400": { path: "/sessions", body: { state: 5 } },
  "POST /sessions/import 201": {
    path: "/sessions/import",
    before: callListPets,
    body: async (fresh: Fresh) => (await send(pets.url, "GET", `/sessions/${fresh.id}/export`)).body,
  },
  "POST /sessions/import 400": { path: "/sessions/import", body: { schemaVersion: 1 } },
  "GET /sessions/{id} 200": { path: (f) => `/sessions/${f.id}` },
  "GET /sessions/{id} 404": { path: "/sessions/nope" },
  "DELETE /sessions/{id} 204": { path: (f) => `/sessions/${f.id}` },
  "DELETE /sessions/{id} 404": { path: "/sessions/nope" },
  "GET /sessions/{id}/state 200": { path: (f) => `/sessions/${f.id}/state` },
  "GET /sessions/{id}/state 404": { path: "/sessions/nope/state" },
  "PUT /sessions/{id}/state 200": { path: (f) => `/sessions/${f.id}/state`, body: { pets: {} } },
  "PUT /sessions/{id}/state 400": { path: (f) => `/sessions/${f.id}/state`, body: [1] },
  "PUT /sessions/{id}/state 404": { path: "/sessions/nope/state", body: {} },
  "POST /sessions/{id}/fork 201": { path: (f) => `/sessions/${f.id}/fork`, body: { snapshot: 0 } },
  "POST /sessions/{id}/fork 400": { path: (f) => `/sessions/${f.id}/fork`, body: { snapshot: -1 } },
  "POST /sessions/{id}/fork 404": { path: "/sessions/nope/fork", body: {} },
  "POST /sessions/{id}/reset 200": { path: (f) => `/sessions/${f.id}/reset` },
  "POST /sessions/{id}/reset 404": { path: "/sessions/nope/reset" },
  "GET /sessions/{id}/history 200": { path: (f) => `/sessions/${f.id}/history`, before: callListPets },
  "GET /sessions/{id}/history 404": { path: "/sessions/nope/history" },
  "POST /sessions/{id}/calls 200": {
    path: (f) => `/sessions/${f.id}/calls`,
    body: { name: "listPets", arguments: { limit: 1 } },
  },
  "POST /sessions/{id}/calls 400": { path: (f) => `/sessions/${f.id}/calls`, body: { arguments: {} } },
  "POST /sessions/{id}/calls 404": { path: "/sessions/nope/calls", body: { name: "listPets" } },
  "GET /sessions/{id}/export 200": { path: (f) => `/sessions/${f.id}/export` },
  "GET /sessions/{id}/export 404": { path: "/sessions/nope/export" },
  "POST /sessions/{id}/replay 201": {
    path: (f) => `/sessions/${f.id}/replay`,
    before: callListPets,
    body: { simulator: "schema" },
  },
  "POST /sessions/{id}/replay 400": { path: (f) => `/sessions/${f.id}/replay`, body: { simulator: "magic" } },
  "POST /sessions/{id}/replay 404": { path: "/sessions/nope/replay", body: { simulator: "schema" } },
  "GET /tools 200": { path: "/tools" },
  "GET /session-id 200": { path: "/session-id" },
  "POST /set-session-state 200": {
    path: "/set-session-state",
    session: true,
    body: { state: { pets: {} }, bootstrap_mode: "skip" },
  },
  "POST /set-session-state 400": { path: "/set-session-state", body: { state: {} } },
  "GET /get-session-state 200": { path: "/get-session-state", session: true },
  "GET /get-session-state 400": { path: "/get-session-state" },
  "GET /get-session-history 200": { path: "/get-session-history", session: true, before: callListPets },
  "GET /get-session-history 400": { path: "/get-session-history", session: "nope" },
  "POST /update_state 200": {
    path: "/update_state",
    session: true,
    body: { previous_state: { pets: {} }, tool_calls: [{ name: "listPets", arguments: {}, result: [] }] },
  },
  "POST /update_state 400": { path: "/update_state", body: { previous_state: {}, tool_calls: [] } },
  "POST /update_state 422": { path: "/update_state", session: true, body: { tool_calls: "none" } },
  "POST /update-state-from-real 200": {
    path: "/update-state-from-real",
    session: true,
    body: { tool_calls: [{ name: "listPets", arguments: {}, result: [] }] },
  },
  "POST /update-state-from-real 400": {
    path: "/update-state-from-real",
    session: true,
    body: { tool_calls: [] },
  },
  "GET /get-session-llm-usage 200": { path: "/get-session-llm-usage?include_events=true", session: true },
  "GET /get-session-llm-usage 400": { path: "/get-session-llm-usage" },
  "GET /get-session-llm-usage 422": { path: "/get-session-llm-usage?limit=many", session: true },
  "GET /openapi.json 200": { path: "/openapi.json" },
  "GET /docs 200": { path: "/docs" },
  "GET /metrics 200": { path: "/metrics" },
  "GET /livez 200": { path: "/livez" },
  "GET /readyz 200": { path: "/readyz" },
  "GET /readyz 503": { base: () => notReady.url, path: "/readyz" },
  "POST /openenv/reset 200": { path: "/openenv/reset", body: { episode_id: "docs" } },
  "POST /openenv/step 200": { path: "/openenv/step", body: { action: { type: "list_tools" } } },
  "GET /openenv/state 200": { path: "/openenv/state" },
  "GET /openenv/schema 200": { path: "/openenv/schema" },
  "GET /openenv/metadata 200": { path: "/openenv/metadata" },
  "GET /openenv/health 200": { path: "/openenv/health" },
  "POST /openenv/mcp 200": { path: "/openenv/mcp", body: { jsonrpc: "2.0", id: 1, method: "tools/list" } },
  "POST /mcp 200": { path: "/mcp", body: MCP_INIT, headers: () => MCP_HEADERS },
  "POST /mcp 400": {
    path: "/mcp",
    body: { jsonrpc: "2.0", id: 2, method: "ping" },
    headers: () => MCP_HEADERS,
  },
  "POST /mcp 404": {
    path: "/mcp",
    body: { jsonrpc: "2.0", id: 2, method: "ping" },
    headers: () => ({ ...MCP_HEADERS, "mcp-session-id": "nope" }),
  },
  "DELETE /mcp 200": { path: "/mcp", mcp: true, headers: (f) => ({ "mcp-session-id": f.mcp }) },
  "DELETE /mcp 400": { path: "/mcp" },
  "DELETE /mcp 404": { path: "/mcp", headers: () => ({ "mcp-session-id": "nope" }) },
};
// The four rows that stand for every tool's routes, each with the four answers a tool route gives.
for (const [row, route] of Object.entries(TOOL_ROWS)) {
  const byName = route.kind.endsWith("operationId");
  const valid = byName ? { body: { petId: 12 } } : {};
  const invalid = byName ? { body: { petId: "twelve" } } : { path: route.concrete.replace("12", "twelve") };
  SCENARIOS[`${row} 200`] = { path: route.concrete, session: true, ...valid };
  SCENARIOS[`${row} 400`] = { path: route.concrete, ...valid };
  SCENARIOS[`${row} 422`] = { path: route.concrete, session: true, ...invalid };
  SCENARIOS[`${row} 500`] = { base: () => failing.url, path: route.concrete, session: true, ...valid };
}

async function freshOn(base: string, mcp: boolean): Promise<Fresh> {
  const { id } = (await send(base, "POST", "/sessions")).body as { id: string };
  if (!mcp) return { id, mcp: "" };
  const init = await send(base, "POST", "/mcp", { body: MCP_INIT, headers: MCP_HEADERS });
  return { id, mcp: init.headers.get("mcp-session-id") as string };
}

async function run(key: string, method: string): Promise<Answer> {
  const scenario = SCENARIOS[key] as Scenario;
  const base = scenario.base?.() ?? pets.url;
  const fresh = await freshOn(base, scenario.mcp === true);
  await scenario.before?.(fresh);
  const path = typeof scenario.path === "function" ? scenario.path(fresh) : scenario.path;
  const body = typeof scenario.body === "function" ? await scenario.body(fresh) : scenario.body;
  const headers = {
    ...(scenario.session ? { "x-session-id": scenario.session === true ? fresh.id : scenario.session } : {}),
    ...(scenario.headers?.(fresh) ?? {}),
  };
  return send(base, method, path, { ...(body !== undefined ? { body } : {}), headers });
}

// --- the tests ---------------------------------------------------------------------------------------------

describe("docs/server.md's route table", () => {
  it("is read: every row has a route, a response and a Gecko column", () => {
    expect(ROWS.length).toBeGreaterThan(25);
    for (const row of ROWS) {
      expect(row.method, JSON.stringify(row)).toMatch(/^(GET|POST|PUT|DELETE|PATCH|\{method\})$/);
      expect(row.responses.length, `${row.method} ${row.path}`).toBeGreaterThan(0);
      expect(row.gecko, `${row.method} ${row.path}`).not.toBe("");
    }
    expect(
      Object.keys(TOOL_ROWS).every((key) => ROWS.some((row) => `${row.method} ${row.path}` === key)),
    ).toBe(true);
  });

  it("lists exactly the routes of /openapi.json that are not tools, and a row for each form of tool route", async () => {
    const document = (await send(pets.url, "GET", "/openapi.json")).body as any;
    const served = new Set<string>();
    const toolKinds = new Set<string>();
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, any>>))
      for (const [method, operation] of Object.entries(item)) {
        if (operation.tags?.[0] === "tools") toolKinds.add(operation["x-terrarium-route"]);
        else served.add(`${method.toUpperCase()} ${path}`);
      }
    const documented = ROWS.filter((row) => !isToolRow(row)).map((row) => `${row.method} ${row.path}`);
    expect(new Set(documented).size).toBe(documented.length);
    expect(new Set(documented)).toEqual(served);
    expect(toolKinds).toEqual(new Set(Object.values(TOOL_ROWS).map((route) => route.kind)));
    for (const route of Object.values(TOOL_ROWS)) {
      const operation = document.paths[route.path]?.[route.method.toLowerCase()];
      expect(operation?.["x-terrarium-route"], `${route.method} ${route.path}`).toBe(route.kind);
    }
  });

  it("documents each route's request as /openapi.json declares it: session header, body keys, query", async () => {
    const document = (await send(pets.url, "GET", "/openapi.json")).body as any;
    const resolve = (value: any) => componentOf(document, value);
    for (const row of ROWS) {
      const target = TOOL_ROWS[`${row.method} ${row.path}`];
      const operation =
        document.paths[target?.path ?? row.path]?.[(target?.method ?? row.method).toLowerCase()];
      const label = `${row.method} ${row.path}`;
      expect(operation, label).toBeDefined();
      const parameters = (operation.parameters ?? []).map(resolve) as Array<{
        name: string;
        in: string;
        required?: boolean;
      }>;
      const requiredHeaders = parameters.filter((p) => p.in === "header" && p.required).map((p) => p.name);
      if (target) expect(requiredHeaders, label).toContain("X-Session-ID");
      else expect(requiredHeaders, label).toEqual(row.headers);
      if (!target)
        expect(
          parameters.filter((p) => p.in === "query").map((p) => p.name),
          label,
        ).toEqual(row.query);
      // Responses: the documented statuses are the declared ones.
      expect(Object.keys(operation.responses).map(Number).sort(), label).toEqual(
        row.responses.map((response) => response.status).sort(),
      );
      if (target) continue;
      const schema = resolve(operation.requestBody?.content?.["application/json"]?.schema);
      if (!row.body) {
        expect(operation.requestBody, label).toBeUndefined();
        continue;
      }
      if (row.body.kind === "word") {
        expect(row.body.word, label).toBe("state");
        expect(schema, label).toMatchObject({ type: "object" });
        expect(schema.properties, label).toBeUndefined();
        continue;
      }
      expect(row.body.kind, label).toBe("object");
      const entries = (row.body as Extract<Shape, { kind: "object" }>).entries;
      expect(Object.keys(schema.properties ?? {}).sort(), label).toEqual(entries.map((e) => e.key).sort());
      expect([...(schema.required ?? [])].sort(), label).toEqual(
        entries
          .filter((e) => !e.optional)
          .map((e) => e.key)
          .sort(),
      );
    }
  });

  it("has one scenario per documented status, and nothing undocumented is exercised", () => {
    const documented = ROWS.flatMap((row) =>
      row.responses.map((response) => `${row.method} ${row.path} ${response.status}`),
    );
    expect(new Set(Object.keys(SCENARIOS))).toEqual(new Set(documented));
  });

  for (const row of ROWS) {
    for (const response of row.responses) {
      const key = `${row.method} ${row.path} ${response.status}`;
      it(`${key}: answers with the documented shape`, async () => {
        const scenario = SCENARIOS[key] as Scenario;
        // The requests that succeed send what the docs say the route reads.
        if (response.status < 300 && !isToolRow(row)) {
          expect(Boolean(scenario.session), key).toBe(row.headers.includes("X-Session-ID"));
          if (row.body?.kind === "object" && isObject(scenario.body)) {
            const keys = row.body.entries.map((entry) => entry.key);
            for (const bodyKey of Object.keys(scenario.body)) expect(keys, key).toContain(bodyKey);
          }
        }
        const method = TOOL_ROWS[`${row.method} ${row.path}`]?.method ?? row.method;
        const answer = await run(key, method);
        expect(answer.status, `${key}: ${answer.text.slice(0, 300)}`).toBe(response.status);
        const value =
          response.shape.kind === "word" && ["html", "text", "—"].includes(response.shape.word)
            ? answer.text
            : answer.body;
        expect(misfits(value, response.shape), key).toEqual([]);
      });
    }
  }
});

describe("/openapi.json", () => {
  /** Concrete paths for a template, one value per parameter. */
  const concrete = (path: string) => path.replace(/\{[^}]+\}/g, "1");
  const templateMatches = (template: string, path: string) =>
    new RegExp(
      `^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{[^}]+\\?\}/g, "[^/]+")}$`,
    ).test(path);

  it("lists exactly the routes the server answers", async () => {
    const document = (await send(pets.url, "GET", "/openapi.json")).body as any;
    const paths = document.paths as Record<string, Record<string, unknown>>;
    const listed = Object.entries(paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => ({ method: method.toUpperCase(), path })),
    );
    expect(listed.length).toBeGreaterThan(40);
    for (const { method, path } of listed) {
      // Every listed route is served: whatever the answer, it is not "no such route" or "wrong method".
      const answer = await send(pets.url, method, concrete(path), {
        ...(["POST", "PUT", "PATCH"].includes(method) ? { body: {} } : {}),
      });
      const code = (answer.body as any)?.error?.code;
      expect([405].includes(answer.status) || code === "NOT_FOUND", `${method} ${path}: ${answer.text}`).toBe(
        false,
      );
    }
    for (const path of Object.keys(paths)) {
      for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"]) {
        if (method in (paths[path] as object) || method.toLowerCase() in (paths[path] as object)) continue;
        // Another listed route may answer this method at this concrete path; otherwise it is refused.
        const other = listed.some(
          (route) => route.method === method && templateMatches(route.path, concrete(path)),
        );
        if (other) continue;
        const answer = await send(pets.url, method, concrete(path));
        expect(answer.status, `${method} ${path} is not listed, so it must not be served`).toBe(405);
      }
    }
    // And paths nobody listed are not served.
    expect((await send(pets.url, "GET", "/nowhere")).status).toBe(404);
    expect((await send(pets.url, "POST", "/Petstore/nowhere")).status).toBe(404);
  });

  it("describes Gecko's routes with Gecko's error shapes and the tools with their schemas", async () => {
    const document = (await send(pets.url, "GET", "/openapi.json")).body as any;
    const listPets = document.paths["/pets"].get;
    expect(listPets.operationId).toBe("listPets");
    expect(
      listPets.parameters.map((p: any) => componentOf(document, p)).map((p: any) => `${p.in}:${p.name}`),
    ).toEqual(["header:X-Session-ID", "query:limit", "query:tag"]);
    expect(document.paths["/listPets"].post.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/tool.listPets.arguments",
    });
    expect(document.components.schemas["tool.listPets.arguments"].properties.limit).toMatchObject({
      type: "integer",
      maximum: 100,
    });
    expect(
      document.paths["/get-session-state"].get.responses["400"].content["application/json"].schema,
    ).toEqual({
      $ref: "#/components/schemas/gecko.SessionError",
    });
    // What every tool route shares is written once.
    expect(listPets.parameters[0]).toEqual({ $ref: "#/components/parameters/SessionId" });
    expect(listPets.responses["422"]).toEqual({ $ref: "#/components/responses/tool.InvalidCall" });
    expect(document.components.responses["tool.InvalidCall"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/gecko.InvalidCall",
    });
  });
});

describe("/docs", () => {
  it("renders every route of /openapi.json on one page with no scripts, offline", async () => {
    const answer = await send(pets.url, "GET", "/docs");
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
    expect(answer.headers.get("content-security-policy")).toMatch(/default-src 'none'/);
    expect(answer.text).not.toMatch(/<script|https?:\/\/(?!127\.0\.0\.1)[a-z]/i);
    const document = (await send(pets.url, "GET", "/openapi.json")).body as any;
    for (const [path, item] of Object.entries(document.paths as Record<string, object>))
      for (const method of Object.keys(item))
        expect(answer.text, `${method} ${path}`).toContain(
          `data-method="${method.toUpperCase()}" data-path="${path.replace(/&/g, "&amp;").replace(/"/g, "&quot;")}"`,
        );
  });

  it("escapes what the catalog says", async () => {
    const { mkdtempSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const file = join(mkdtempSync(join(tmpdir(), "terrarium-docs-")), "evil.json");
    writeFileSync(
      file,
      JSON.stringify([
        {
          type: "function",
          function: {
            name: "get_x",
            description: '<script>alert("x")</script> & <img src=x onerror=1>',
            parameters: { type: "object", properties: {} },
          },
        },
      ]),
    );
    const server = await startServer({ sources: [file], port: 0 });
    try {
      const page = await (await fetch(`${server.url}/docs`)).text();
      expect(page).not.toContain("<script>");
      expect(page).not.toContain("<img");
      expect(page).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img");
    } finally {
      await server.close();
    }
  });
});
