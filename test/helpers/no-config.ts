import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Runs `fn` the way a new user runs terrarium with no configuration at all: in an empty folder (no
 * terrarium.config.yaml to find), with no TERRARIUM_CONFIG, the response cache off, and OpenAI's base URL
 * and key pointing at a scripted server on 127.0.0.1, so `openai:<model>` reaches it. Everything is put
 * back afterwards.
 */
export async function withoutConfig<T>(baseURL: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "terrarium-no-config-"));
  const previousCwd = process.cwd();
  const variables = ["TERRARIUM_CONFIG", "TERRARIUM_CACHE", "OPENAI_BASE_URL", "OPENAI_API_KEY"] as const;
  const previous = Object.fromEntries(variables.map((name) => [name, process.env[name]]));
  delete process.env.TERRARIUM_CONFIG;
  process.env.TERRARIUM_CACHE = "off";
  process.env.OPENAI_BASE_URL = baseURL;
  process.env.OPENAI_API_KEY = "test-key";
  process.chdir(dir);
  try {
    return await fn(dir);
  } finally {
    process.chdir(previousCwd);
    for (const name of variables) {
      const value = previous[name];
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
