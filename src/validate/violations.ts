import type { ErrorObject } from "ajv";
import { escapeToken, getAtPointer } from "../core/json-pointer.js";
import {
  describeExpectation,
  describeKind,
  describeList,
  describePath,
  describeValue,
  FORMAT_WORDS,
} from "./describe.js";

/** One broken rule in a tool call: where (a JSON Pointer into the arguments), which rule, and why. */
export interface Violation {
  path: string;
  rule: string;
  message: string;
}

/**
 * Turns Ajv's errors into violations. Errors inside `oneOf` / `anyOf` alternatives are folded into one
 * violation per combinator that names the alternatives and what the closest one is missing, instead of
 * a pile of contradictory messages ("must be a string", "must be an object", …).
 */
export function toViolations(errors: readonly ErrorObject[], args: unknown): Violation[] {
  // Most calls break plain rules: only combinators need the bookkeeping of which errors they own.
  let hasCombinator = false;
  for (const error of errors)
    if (error.keyword === "oneOf" || error.keyword === "anyOf") hasCombinator = true;
  const claimedBy = hasCombinator ? claimBranchErrors(errors) : [];
  const violations: Violation[] = [];
  for (let index = 0; index < errors.length; index++) {
    if ((claimedBy[index] ?? -1) !== -1) continue;
    const violation = translate(errors[index] as ErrorObject, index, errors, claimedBy, args);
    if (violation) violations.push(violation);
  }
  return dedupe(violations);
}

/** For each error, the index of the combinator error whose alternatives produced it, or -1. */
function claimBranchErrors(errors: readonly ErrorObject[]): number[] {
  const claimedBy = errors.map(() => -1);
  // Outer combinators come after inner ones in Ajv's output; walking backwards lets the outermost claim first.
  for (let index = errors.length - 1; index >= 0; index--) {
    const error = errors[index] as ErrorObject;
    if ((error.keyword !== "oneOf" && error.keyword !== "anyOf") || claimedBy[index] !== -1) continue;
    const prefix = `${error.schemaPath}/`;
    for (let j = index - 1; j >= 0; j--) {
      if (claimedBy[j] === -1 && (errors[j] as ErrorObject).schemaPath.startsWith(prefix))
        claimedBy[j] = index;
    }
  }
  return claimedBy;
}

function translate(
  error: ErrorObject,
  index: number,
  errors: readonly ErrorObject[],
  claimedBy: number[],
  args: unknown,
): Violation | undefined {
  const path = error.instancePath;
  const where = describePath(path);
  const value = getAtPointer(args, path);
  const params = error.params as Record<string, unknown>;
  const top = path === "";
  switch (error.keyword) {
    case "required": {
      const missing = String(params.missingProperty);
      return {
        path: `${path}/${escapeToken(missing)}`,
        rule: "required",
        message: top
          ? `missing required argument "${missing}"`
          : `${where} is missing its required field "${missing}"`,
      };
    }
    case "additionalProperties":
    case "unevaluatedProperties": {
      const extra = String(params.additionalProperty ?? params.unevaluatedProperty);
      const list = acceptedList(error.parentSchema);
      return {
        path: `${path}/${escapeToken(extra)}`,
        rule: "unknown_argument",
        message: top ? `unknown argument "${extra}"${list}` : `${where} has no field "${extra}"${list}`,
      };
    }
    case "type":
      return {
        path,
        rule: "type",
        message: `${where} must be ${describeExpectation(error.parentSchema)}, got ${describeKind(value)}${
          value === null || typeof value === "object" ? "" : ` ${describeValue(value)}`
        }`,
      };
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum": {
      const symbol = { minimum: "≥", maximum: "≤", exclusiveMinimum: ">", exclusiveMaximum: "<" }[
        error.keyword
      ];
      return {
        path,
        rule: error.keyword,
        message: `${where} must be ${symbol} ${params.limit}, got ${describeValue(value)}`,
      };
    }
    case "multipleOf":
      return {
        path,
        rule: "multipleOf",
        message: `${where} must be a multiple of ${params.multipleOf}, got ${describeValue(value)}`,
      };
    case "enum":
      return {
        path,
        rule: "enum",
        message: `${where} must be one of ${describeList(params.allowedValues as unknown[])}, got ${describeValue(value)}`,
      };
    case "const":
      return {
        path,
        rule: "const",
        message: `${where} must be exactly ${describeValue(params.allowedValue)}, got ${describeValue(value)}`,
      };
    case "minLength":
    case "maxLength": {
      const length = typeof value === "string" ? [...value].length : 0;
      const bound = error.keyword === "minLength" ? "at least" : "at most";
      return {
        path,
        rule: error.keyword,
        message: `${where} must be ${bound} ${params.limit} character${params.limit === 1 ? "" : "s"} long, got ${length}: ${describeValue(value)}`,
      };
    }
    case "pattern":
      return {
        path,
        rule: "pattern",
        message: `${where} must match the pattern ${params.pattern}, got ${describeValue(value)}`,
      };
    case "format": {
      const format = String(params.format);
      return {
        path,
        rule: "format",
        message: `${where} must be ${FORMAT_WORDS[format] ?? `in "${format}" format`}, got ${describeValue(value)}`,
      };
    }
    case "minItems":
    case "maxItems": {
      const count = Array.isArray(value) ? value.length : 0;
      const bound = error.keyword === "minItems" ? "at least" : "at most";
      return {
        path,
        rule: error.keyword,
        message: `${where} must have ${bound} ${params.limit} item${params.limit === 1 ? "" : "s"}, got ${count}`,
      };
    }
    case "uniqueItems":
      return {
        path,
        rule: "uniqueItems",
        message: `${where} must not contain duplicates, but items ${Math.min(Number(params.i), Number(params.j))} and ${Math.max(Number(params.i), Number(params.j))} are equal`,
      };
    case "minProperties":
    case "maxProperties": {
      const bound = error.keyword === "minProperties" ? "at least" : "at most";
      return {
        path,
        rule: error.keyword,
        message: `${where} must have ${bound} ${params.limit} field${params.limit === 1 ? "" : "s"}`,
      };
    }
    case "dependentRequired":
      return {
        path: `${path}/${escapeToken(String(params.missingProperty))}`,
        rule: "dependentRequired",
        message: `${top ? `argument "${params.property}"` : `field "${params.property}" of ${where}`} requires "${params.missingProperty}" as well`,
      };
    case "oneOf":
    case "anyOf":
      return combinatorViolation(error, index, errors, claimedBy, args);
    case "not":
      return {
        path,
        rule: "not",
        message: `${where} must not be ${describeExpectation(error.schema)}, got ${describeValue(value)}`,
      };
    case "if":
      // The failing `then`/`else` branch reports what is wrong; "must match then schema" adds nothing.
      return undefined;
    case "false schema":
      return {
        path,
        rule: top ? "arguments" : "unknown_argument",
        message: top ? "this tool accepts no arguments" : `${where} is not allowed here`,
      };
    default:
      return { path, rule: error.keyword, message: `${where} ${error.message ?? "is invalid"}` };
  }
}

function combinatorViolation(
  error: ErrorObject,
  index: number,
  errors: readonly ErrorObject[],
  claimedBy: number[],
  args: unknown,
): Violation {
  const path = error.instancePath;
  const where = describePath(path);
  const alternatives = Array.isArray(error.schema) ? (error.schema as unknown[]) : [];
  const passing = (error.params as { passingSchemas?: number[] | null }).passingSchemas;
  if (error.keyword === "oneOf" && Array.isArray(passing) && passing.length > 1) {
    return {
      path,
      rule: "oneOf",
      message: `${where} matches ${passing.length} of the allowed shapes (#${passing.map((n) => n + 1).join(", #")}), but must match exactly one`,
    };
  }
  const shapes = alternatives.map(describeExpectation).join("; or ");
  // The alternative with the fewest complaints that at least has the right type is the one the caller meant.
  const prefix = `${error.schemaPath}/`;
  const byBranch = new Map<number, ErrorObject[]>();
  errors.forEach((candidate, j) => {
    if (claimedBy[j] !== index) return;
    const branch = Number(candidate.schemaPath.slice(prefix.length).split("/")[0]);
    byBranch.set(branch, [...(byBranch.get(branch) ?? []), candidate]);
  });
  let closest: Violation[] | undefined;
  let best = Number.POSITIVE_INFINITY;
  for (const branchErrors of byBranch.values()) {
    const wrongType = branchErrors.some((e) => e.keyword === "type" && e.instancePath === path);
    if (wrongType) continue;
    const inner = toViolations(branchErrors, args);
    if (inner.length > 0 && inner.length < best) {
      best = inner.length;
      closest = inner;
    }
  }
  const near = closest
    ? `; the closest allowed shape fails because ${closest
        .slice(0, 3)
        .map((v) => v.message)
        .join("; ")}`
    : "";
  return {
    path,
    rule: error.keyword,
    message: `${where} must be ${shapes}; got ${describeKind(getAtPointer(args, path))}${near}`,
  };
}

const acceptedCache = new WeakMap<object, string>();

/** "; accepted: a, b" for a schema's argument names (cached: the same schema comes back call after call). */
function acceptedList(schema: unknown): string {
  if (schema === null || typeof schema !== "object") return "; it accepts none";
  let text = acceptedCache.get(schema);
  if (text === undefined) {
    const properties = (schema as Record<string, unknown>).properties;
    const names = properties && typeof properties === "object" ? Object.keys(properties) : [];
    text = names.length > 0 ? `; accepted: ${names.join(", ")}` : "; it accepts none";
    acceptedCache.set(schema, text);
  }
  return text;
}

function dedupe(violations: Violation[]): Violation[] {
  if (violations.length < 2) return violations;
  // A type violation already states the whole expectation, enum and const included.
  const wrongType = new Set<string>();
  for (const violation of violations) if (violation.rule === "type") wrongType.add(violation.path);
  const seen = new Set<string>();
  const kept: Violation[] = [];
  for (const violation of violations) {
    if ((violation.rule === "enum" || violation.rule === "const") && wrongType.has(violation.path)) continue;
    const key = `${violation.path}\u0000${violation.rule}\u0000${violation.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    kept.push(violation);
  }
  return kept;
}
