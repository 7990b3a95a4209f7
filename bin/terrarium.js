#!/usr/bin/env node
// Thin launcher: the CLI is compiled into dist/ by `npm run build` (which `npm install` runs via `prepare`).
import("../dist/cli.js").then(
  ({ runCliProcess }) => runCliProcess(process.argv.slice(2)),
  (error) => {
    console.error(`terrarium: could not start (${error.message}); run \`npm run build\` first`);
    process.exitCode = 1;
  },
);
