import type { ValidateFunction } from "ajv";
import type { Catalog } from "../catalog/catalog.js";
import type { Tool } from "../catalog/tool.js";
import { createAjv, SchemaCompiler } from "./ajv.js";
import { describeKind } from "./describe.js";
import { toViolations, type Violation } from "./violations.js";

/** The verdict on one call. */
export interface CallValidation {
  name: string;
  valid: boolean;
  errors: Violation[];
}

/** A call as found in datasets: `{name, arguments}` or OpenAI's `{function: {name, arguments}}`. */
export interface CallLike {
  name?: unknown;
  arguments?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

/**
 * Syntactic validation of tool calls against a catalog (Gecko's rule-based validator): the tool must
 * exist, and the arguments must satisfy its input schema. Every violation is reported, each with the
 * JSON Pointer of the offending argument; messages state the rule, never the value that would pass.
 */
export class CallValidator {
  private readonly compiler: SchemaCompiler;
  private readonly compiled = new WeakMap<Tool, ValidateFunction>();

  constructor(compiler: SchemaCompiler = new SchemaCompiler(createAjv())) {
    this.compiler = compiler;
  }

  /** Compiles every tool of the catalog now, so that schema problems surface before any call. */
  prepare(catalog: Catalog): void {
    for (const tool of catalog.tools) this.validatorFor(tool);
  }

  validate(catalog: Catalog, call: CallLike): CallValidation {
    const { name, args } = unpack(call);
    if (typeof name !== "string" || name === "") {
      return invalid(String(name ?? ""), { path: "", rule: "name", message: 'the call has no tool "name"' });
    }
    const tool = catalog.get(name);
    if (!tool) {
      const closest = catalog.closest(name);
      const names = closest.map((n) => `"${n}"`).join(", ");
      const hint =
        closest.length === 0
          ? ""
          : closest.length === 1
            ? `; the closest tool is ${names}`
            : `; the closest tools are ${names}`;
      return invalid(name, {
        path: "",
        rule: "unknown_tool",
        message: `there is no tool named "${name}"${hint}`,
      });
    }
    return this.validateArguments(tool, args);
  }

  /** Validates arguments against one tool (parsing them first when they arrive as a JSON string). */
  validateArguments(tool: Tool, rawArgs: unknown): CallValidation {
    let args = rawArgs;
    if (typeof args === "string") {
      try {
        args = JSON.parse(args);
      } catch {
        return invalid(tool.name, {
          path: "",
          rule: "arguments",
          message: "the arguments must be a JSON object, got a string that is not valid JSON",
        });
      }
    }
    if (args === undefined || args === null) args = {};
    if (typeof args !== "object" || Array.isArray(args)) {
      return invalid(tool.name, {
        path: "",
        rule: "arguments",
        message: `the arguments must be a JSON object, got ${describeKind(args)}`,
      });
    }
    const validate = this.validatorFor(tool);
    if (validate(args)) return { name: tool.name, valid: true, errors: [] };
    return { name: tool.name, valid: false, errors: toViolations(validate.errors ?? [], args) };
  }

  private validatorFor(tool: Tool): ValidateFunction {
    let validate = this.compiled.get(tool);
    if (!validate) {
      validate = this.compiler.compile(tool.inputSchema, {
        tool: tool.name,
        file: tool.origin.file,
        pointer: tool.origin.pointer,
      });
      this.compiled.set(tool, validate);
    }
    return validate;
  }
}

function unpack(call: CallLike): { name: unknown; args: unknown } {
  if (call && typeof call === "object" && call.function && typeof call.function === "object") {
    return { name: call.function.name, args: call.function.arguments };
  }
  return { name: call?.name, args: call?.arguments };
}

function invalid(name: string, violation: Violation): CallValidation {
  return { name, valid: false, errors: [violation] };
}
