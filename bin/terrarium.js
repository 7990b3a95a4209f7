#!/usr/bin/env node
// Thin launcher: the CLI is built into dist/ by `npm run build` (run automatically by `npm ci`).
import("../dist/cli.js").catch((error) => {
  console.error(`terrarium: could not start (${error.message}). Run \`npm run build\` first.`);
  process.exitCode = 1;
});
