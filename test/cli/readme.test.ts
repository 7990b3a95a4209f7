import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

/** README.md promises two commands that work on a fresh machine; the first is run here as written. */
describe("README", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const block = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
  const [mainJob, tests] = block.split("\n").map((line) => line.replace(/\s+#.*$/, "").trim());

  it("starts with the main job and the test command", () => {
    expect(mainJob).toMatch(/^npm install && node bin\/terrarium\.js /);
    expect(tests).toBe("npm test");
    expect(readFileSync(join(ROOT, ".ci", "run"), "utf8")).toContain("\nnpm test\n");
  });

  it("runs the main job on the embedded example (with the built CLI)", () => {
    expect(existsSync(join(ROOT, "dist", "cli.js")), "dist/ is missing: run `npm run build`").toBe(true);
    const command = (mainJob as string).replace(/^npm install && /, "");
    const stdout = execFileSync("sh", ["-c", command], {
      cwd: ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    const records = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(records).toHaveLength(7);
    expect(records.filter((r) => r.results?.every((c: { valid: boolean }) => c.valid))).toHaveLength(1);
  });
});
