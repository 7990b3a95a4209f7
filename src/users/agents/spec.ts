import { TerrariumError } from "../../core/errors.js";
import type { ParsedAgentSpec } from "./types.js";

export const AGENT_SPEC_FORMS =
  "planner:<provider:model> (with --agent-tools), openai-compatible:<baseURL>#<model>, " +
  "http:<url> (with --http-config), module:<path>[#<export>]";

function refuse(spec: string, reason: string): TerrariumError {
  return new TerrariumError(
    "INVALID_INPUT",
    `--agent "${spec}" ${reason}; the valid forms are ${AGENT_SPEC_FORMS}`,
  );
}

function httpUrl(spec: string, value: string, what: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refuse(spec, `has ${what} "${value}", which is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw refuse(spec, `has ${what} "${value}", which is not an http(s) URL`);
  return value;
}

/** Takes an `--agent` spec apart (no file, network or model is touched). */
export function parseAgentSpec(spec: string): ParsedAgentSpec {
  if (typeof spec !== "string" || spec.trim() === "") throw refuse(String(spec ?? ""), "is empty");
  const text = spec.trim();
  const colon = text.indexOf(":");
  const kind = colon > 0 ? text.slice(0, colon) : "";
  const rest = colon > 0 ? text.slice(colon + 1) : "";
  switch (kind) {
    case "planner": {
      const separator = rest.indexOf(":");
      if (separator <= 0 || separator === rest.length - 1)
        throw refuse(
          spec,
          `names the model "${rest}", which is not <provider:model> (e.g. planner:openai:gpt-4.1-mini)`,
        );
      return { kind: "planner", model: rest };
    }
    case "openai-compatible": {
      const hash = rest.lastIndexOf("#");
      if (hash < 0) throw refuse(spec, "has no #<model> after the base URL");
      const model = rest.slice(hash + 1).trim();
      if (model === "") throw refuse(spec, "has an empty model after #");
      const baseURL = httpUrl(spec, rest.slice(0, hash), "the base URL").replace(/\/+$/, "");
      return { kind: "openai-compatible", baseURL, model };
    }
    case "http":
    case "https": {
      // `http:<url>`; a bare `http://host/...` is read the same way.
      const url = kind === "https" || rest.startsWith("//") ? text : rest;
      return { kind: "http", url: httpUrl(spec, url, "the URL") };
    }
    case "module": {
      const hash = rest.lastIndexOf("#");
      const path = (hash < 0 ? rest : rest.slice(0, hash)).trim();
      const exportName = hash < 0 ? "default" : rest.slice(hash + 1).trim();
      if (path === "") throw refuse(spec, "has no module path");
      if (!/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(exportName))
        throw refuse(spec, `names the export "${exportName}", which is not a JavaScript identifier`);
      return { kind: "module", path, exportName };
    }
    default:
      throw refuse(spec, kind ? `has the unknown kind "${kind}"` : "names no kind");
  }
}
