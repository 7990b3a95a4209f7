import { readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, resolve } from "node:path";
import { TerrariumError } from "../../core/errors.js";
import { SCENARIO_LIMITS } from "../scenario/index.js";

/** A file `users test` may run: named on the command line, or found in a folder it was given. */
export interface TestFileCandidate {
  file: string;
  /** Named on the command line (a file without `script:` is then an error, not a note). */
  given: boolean;
}

export interface DiscoveredTestFiles {
  /** Files that hold a `script:` key, to be loaded as tests, in order (given order, then file name). */
  candidates: TestFileCandidate[];
  /** Files of a folder that hold no `script:` key: skipped, each with why. */
  skipped: Array<{ file: string; reason: string }>;
}

const TEST_EXTENSIONS = new Set([".yaml", ".yml", ".json"]);
/** Folders never searched: version control, dependencies, hidden folders. */
const IGNORED_FOLDER = /^(\..*|node_modules)$/;
/** Deepest folder searched below a given one. */
export const MAX_TEST_FOLDER_DEPTH = 16;
/** Most files looked at across every folder given. */
export const MAX_TEST_FILES = SCENARIO_LIMITS.maxFilesPerFolder * 10;

// `script:` as a key of a YAML mapping (also `- script:` in a list item) or a JSON object.
const SCRIPT_KEY = /(^|\n)[ \t]*(-[ \t]+)?(["']?)script\3[ \t]*:|"script"\s*:/;

/** Whether a file's text has a `script` key anywhere: a cheap look before it is loaded as a test. */
export function mentionsScript(text: string): boolean {
  return SCRIPT_KEY.test(text);
}

/**
 * The files the paths of `users test` name: each path a file (.yaml, .yml, .json) or a folder searched
 * with its subfolders (not hidden ones or node_modules), its files in name order. A folder's file without
 * a `script:` key is skipped with a note (a folder of tests may hold knowledge and plain scenarios); a
 * path that does not exist, or a given file that is not YAML or JSON, is refused. The same file named
 * twice is run once.
 */
export function discoverTestFiles(paths: readonly string[], cwd = process.cwd()): DiscoveredTestFiles {
  if (paths.length === 0) throw new TerrariumError("INVALID_INPUT", "give at least one test file or folder");
  const candidates: TestFileCandidate[] = [];
  const skipped: DiscoveredTestFiles["skipped"] = [];
  const seen = new Set<string>();
  let looked = 0;
  const add = (file: string, given: boolean) => {
    if (seen.has(file)) return;
    seen.add(file);
    if (++looked > MAX_TEST_FILES)
      throw new TerrariumError(
        "INVALID_INPUT",
        `more than ${MAX_TEST_FILES} .yaml, .yml and .json files under the folders given; name the test folders`,
      );
    if (given) {
      candidates.push({ file, given });
      return;
    }
    const size = statSync(file).size;
    if (size > SCENARIO_LIMITS.maxScenarioFileBytes) {
      skipped.push({ file, reason: `larger than a scenario file may be (${size} bytes)` });
      return;
    }
    if (mentionsScript(readFileSync(file, "utf8"))) candidates.push({ file, given });
    else skipped.push({ file, reason: "no script: key (not a test)" });
  };
  const walk = (folder: string, depth: number) => {
    if (depth > MAX_TEST_FOLDER_DEPTH) return;
    const entries = readdirSync(folder, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    for (const entry of entries) {
      const path = join(folder, entry.name);
      if (entry.isFile() && TEST_EXTENSIONS.has(extname(entry.name).toLowerCase())) add(path, false);
    }
    for (const entry of entries)
      if (entry.isDirectory() && !IGNORED_FOLDER.test(entry.name)) walk(join(folder, entry.name), depth + 1);
  };
  for (const path of paths) {
    const target = resolve(cwd, path);
    let stats: ReturnType<typeof statSync>;
    try {
      stats = statSync(target);
    } catch {
      throw new TerrariumError("INVALID_INPUT", `${path}: no such test file or folder`, {
        where: { file: target },
      });
    }
    if (stats.isDirectory()) walk(target, 0);
    else if (!TEST_EXTENSIONS.has(extname(target).toLowerCase()))
      throw new TerrariumError(
        "INVALID_INPUT",
        `${path}: a test file is .yaml, .yml or .json (a scenario with a script: list)`,
        { where: { file: target } },
      );
    else add(target, true);
  }
  return { candidates, skipped };
}
