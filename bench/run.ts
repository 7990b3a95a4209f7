/**
 * `npm run bench [-- <name>...] [--json]`: runs the benchmarks (all by default) and prints a table for
 * each, every one against a baseline measured in the same run. Exits non-zero when a target is missed.
 */
import type { BenchResult } from "./report.js";

const BENCHMARKS: Record<string, () => Promise<BenchResult>> = {
  validate: async () => (await import("./validate.js")).benchValidate(),
  models: async () => (await import("./models.js")).benchModels(),
  envs: async () => (await import("./envs.js")).benchEnvs(),
  server: async () => (await import("./server.js")).benchServer(),
  envsim: async () => (await import("./envsim.js")).benchEnvsim(),
  state: async () => (await import("./state.js")).benchState(),
  catalog: async () => (await import("./catalog.js")).benchCatalog(),
  users: async () => (await import("./users.js")).benchUsers(),
  browser: async () => (await import("./browser.js")).benchBrowser(),
  scale: async () => (await import("./scale.js")).benchScale(),
  http: async () => (await import("./http.js")).benchHttp(),
  rl: async () => (await import("./rl.js")).benchRl(),
};

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const asJson = args.includes("--json");
  const names = args.filter((arg) => !arg.startsWith("--"));
  const unknown = names.filter((name) => !(name in BENCHMARKS));
  if (unknown.length > 0) {
    console.error(
      `unknown benchmark ${unknown.join(", ")}; choose from ${Object.keys(BENCHMARKS).join(", ")}`,
    );
    process.exitCode = 2;
    return;
  }
  const results: BenchResult[] = [];
  for (const name of names.length > 0 ? names : Object.keys(BENCHMARKS)) {
    if (!asJson) console.error(`running ${name}…`);
    const result = await (BENCHMARKS[name] as () => Promise<BenchResult>)();
    results.push(result);
    if (!asJson) console.log(`\n## ${result.name}\n${result.lines.join("\n")}`);
  }
  if (asJson) {
    console.log(
      JSON.stringify(
        { schemaVersion: 1, results: results.map(({ name, report, pass }) => ({ name, pass, ...report })) },
        null,
        2,
      ),
    );
  }
  if (results.some((result) => result.pass === false)) process.exitCode = 1;
}

main();
