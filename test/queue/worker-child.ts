// A worker in its own process, for the queue tests (run with `node --import tsx`):
//   worker-child.ts cli <terrarium worker arguments…>   the `terrarium worker` command itself
//   worker-child.ts hold <queue url> <name>              takes items and never finishes them (to be killed)
import { Command } from "commander";
import { knownJobKinds, registerWorkerCommand, startWorker } from "../../src/cli/commands/worker.js";
import { processIo } from "../../src/cli/io.js";
import { loadConfig } from "../../src/models/config.js";
import { Models } from "../../src/models/hub.js";
import type { JobKind } from "../../src/queue/index.js";

const [mode, ...rest] = process.argv.slice(2);
if (mode === "cli") {
  const program = new Command().name("terrarium").option("--config <file>").exitOverride();
  registerWorkerCommand(program, processIo);
  await program.parseAsync(rest, { from: "user" });
} else if (mode === "hold") {
  const [queue, name] = rest as [string, string];
  const models = (roles: Record<string, string>) => {
    const { config } = loadConfig({});
    return new Models({ config: { ...config, roles: { ...config.roles, ...roles } } });
  };
  const holding: JobKind[] = knownJobKinds(models).map((kind) => ({
    kind: kind.kind,
    async open() {
      return {
        process(item) {
          process.stdout.write(`holding ${item.id}\n`);
          return new Promise(() => {});
        },
        async close() {},
      };
    },
  }));
  await startWorker(
    { queue, concurrency: 2, name, lockDuration: 1500, stalledInterval: 500 },
    processIo,
    models,
    holding,
  );
  process.stdout.write("ready\n");
} else {
  throw new Error(`unknown mode ${mode}`);
}
