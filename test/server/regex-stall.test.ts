import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer } from "../../src/server/index.js";

/**
 * One request with a catastrophic pattern used to freeze the whole server: `^(a+)+$` against thirty `a`s
 * and a `!` ran for 11.6 s in V8's backtracking engine, and /health waited as long. Schema patterns now
 * run on a linear-time engine, so the calls are answered in milliseconds and /health never waits.
 */
const EVIL = "^(a+)+$";
const ATTACK = `${"a".repeat(30)}!`;

let dir: string;
let server: Awaited<ReturnType<typeof startServer>>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "terrarium-regex-"));
  const tools = [
    {
      type: "function",
      function: {
        name: "set_code",
        description: "Sets the code.",
        parameters: {
          type: "object",
          properties: { code: { type: "string", pattern: EVIL } },
          required: ["code"],
        },
      },
    },
    {
      type: "function",
      function: {
        name: "tag",
        description: "Tags things; tag names are only a's.",
        parameters: { type: "object", patternProperties: { [EVIL]: { type: "integer" } } },
      },
    },
  ];
  writeFileSync(join(dir, "tools.json"), JSON.stringify(tools));
  // Several parameters in one path segment: V8 backtracks polynomially on a long segment.
  const openapi = {
    openapi: "3.0.3",
    info: { title: "files", version: "1" },
    paths: {
      "/files/{a}{b}{c}{d}!": {
        get: {
          operationId: "get_file",
          parameters: ["a", "b", "c", "d"].map((name) => ({
            name,
            in: "path",
            required: true,
            schema: { type: "string" },
          })),
          responses: { "200": { description: "ok" } },
        },
      },
    },
  };
  writeFileSync(join(dir, "files.json"), JSON.stringify(openapi));
  server = await startServer({
    sources: [join(dir, "tools.json"), join(dir, "files.json")],
    port: 0,
    seed: "1",
  });
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function post(path: string, body: unknown) {
  const response = await fetch(server.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** Milliseconds GET /health takes. */
async function healthLatency(): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/health`);
  await response.text();
  expect(response.status).toBe(200);
  return performance.now() - started;
}

/** What the old code would have spent on one such call: V8's time doubles with each `a`. */
function nativeEstimateMs(): number {
  const native = new RegExp(EVIL, "u");
  const time = (n: number) => {
    const started = performance.now();
    native.test(`${"a".repeat(n)}!`);
    return performance.now() - started;
  };
  time(18); // warm up
  return time(22) * 2 ** (ATTACK.length - 1 - 22);
}

describe("a catastrophic pattern in a tenant's schema", () => {
  it("is answered in milliseconds with an invalid verdict, in `pattern` and in `patternProperties`", async () => {
    const session = (await post("/sessions", {})).body.id as string;
    const started = performance.now();
    const code = await post(`/sessions/${session}/calls`, { name: "set_code", arguments: { code: ATTACK } });
    const tag = await post(`/sessions/${session}/calls`, { name: "tag", arguments: { [ATTACK]: 1 } });
    const elapsed = performance.now() - started;
    expect(code.body).toMatchObject({ status: "invalid", errors: [{ path: "/code", rule: "pattern" }] });
    // The key does not match the pattern, so the pattern's schema does not apply: the call is valid.
    expect(tag.body.status).not.toBe("invalid");
    const tagged = await post(`/sessions/${session}/calls`, { name: "tag", arguments: { aaa: "x" } });
    expect(tagged.body).toMatchObject({ status: "invalid", errors: [{ path: "/aaa", rule: "type" }] });
    // Matching strings pass, in linear time too.
    const fine = await post(`/sessions/${session}/calls`, {
      name: "set_code",
      arguments: { code: "a".repeat(100_000) },
    });
    expect(fine.body.status).not.toBe("invalid");
    // Generous for two shared cores; the backtracking engine needed seconds for each call.
    expect(elapsed).toBeLessThan(2_000);
    expect(nativeEstimateMs()).toBeGreaterThan(1_000);
  });

  it("leaves /health answering within 50 ms while several such calls are being made", async () => {
    const session = (await post("/sessions", {})).body.id as string;
    const latencies: number[] = [];
    let calling = true;
    const calls = (async () => {
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all(
          Array.from({ length: 6 }, (_, k) =>
            k % 2 === 0
              ? post(`/sessions/${session}/calls`, { name: "set_code", arguments: { code: ATTACK } })
              : post(`/sessions/${session}/calls`, { name: "tag", arguments: { [ATTACK]: "x" } }),
          ),
        );
        for (const [k, answer] of answers.entries()) {
          expect(answer.status).toBe(200);
          if (k % 2 === 0) expect(answer.body.status).toBe("invalid");
        }
      }
      calling = false;
    })();
    while (calling) latencies.push(await healthLatency());
    await calls;
    expect(latencies.length).toBeGreaterThan(0);
    latencies.sort((a, b) => a - b);
    const median = latencies[Math.floor(latencies.length / 2)] as number;
    // Each /health used to wait seconds behind a call; now the typical one answers well under 50 ms, and
    // even the slowest (a GC pause, a busy shared core) far from the seconds a call used to take.
    expect(median).toBeLessThan(50);
    expect(latencies[latencies.length - 1]).toBeLessThan(1_000);
  });

  it("in a path template with several parameters in one segment does not stall routing", async () => {
    const segment = "x".repeat(800);
    const started = performance.now();
    const miss = await fetch(`${server.url}/files/${segment}`);
    await miss.text();
    const hit = await fetch(`${server.url}/files/abcd!`, { headers: { "x-session-id": "none" } });
    await hit.text();
    // V8 needs over ten seconds for the 800-character segment (four lazy groups: about n^4 steps).
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(miss.status).toBe(404);
    expect(hit.status).not.toBe(404);
  });
});
