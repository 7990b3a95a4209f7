import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TerrariumError } from "../../core/errors.js";
import type { AgentToolCallRecord, EndReason, TurnRecord } from "../conversation.js";

/** Version of the transcript lines, `summary.json` and `run.json` of a users run folder. */
export const USERS_RUN_SCHEMA_VERSION = 1;

/** The judges' verdicts on one run, as stored in its transcript. */
export interface RunJudgement {
  realism?: Array<{
    turn: number;
    goal: { consistent: boolean; reason: string };
    profile: { consistent: boolean; reason: string };
    knowledge: { consistent: boolean; reason: string };
  }>;
  failures?: Array<{
    turn: number;
    scores: Record<string, { score: number; justification: string }>;
    flagged: string[];
  }>;
  goal?: {
    success: boolean;
    score: number;
    items: Array<{ description: string; status: string; reasoning: string }>;
    checklistSource: string;
  };
  /** A judge that failed: its name and message (the run and the other judges are kept). */
  errors: Record<string, string>;
}

/** What a run is: the first line of its transcript. */
export interface RunHeader {
  runId: string;
  scenarioId: string;
  /** 1-based run number within the scenario. */
  index: number;
  seed: string;
  agent: string;
  mode: string;
  startedAt: string;
}

/** One line of a transcript file (JSONL). */
export type TranscriptLine =
  | ({ type: "run"; schemaVersion: number } & RunHeader)
  | ({ type: "turn" } & TurnRecord)
  | {
      type: "end";
      endReason: EndReason;
      error?: string;
      turns: number;
      agentToolCalls: AgentToolCallRecord[];
      /** The agent's tools' final state, when it is small enough to keep (else its size in bytes). */
      finalState?: unknown;
      finalStateBytes?: number;
      userModel: string;
      durationMs: number;
    }
  | ({ type: "judgement" } & RunJudgement);

/** A run read back from its transcript. */
export interface StoredRun extends RunHeader {
  turns: TurnRecord[];
  end?: Extract<TranscriptLine, { type: "end" }>;
  judgement?: RunJudgement;
  file: string;
}

/** The id of run `index` (1-based) of a scenario; also its transcript's file name. */
export function runIdOf(scenarioId: string, index: number): string {
  return `${scenarioId}.${index}`;
}

export function transcriptPath(outDir: string, runId: string): string {
  return join(outDir, "transcripts", `${runId}.jsonl`);
}

/**
 * Writes a run's transcript as it happens, into `<file>.partial`; `commit` renames it into place, so a
 * transcript under its final name is always a whole run (a crash leaves only a partial file, which a
 * resumed run starts over).
 */
export class TranscriptWriter {
  private readonly partial: string;
  private readonly lines: string[] = [];

  constructor(private readonly file: string) {
    this.partial = `${file}.partial`;
    writeFileSync(this.partial, "");
  }

  write(line: TranscriptLine): void {
    const text = `${JSON.stringify(line)}\n`;
    this.lines.push(text);
    writeFileSync(this.partial, text, { flag: "a" });
  }

  commit(): void {
    renameSync(this.partial, this.file);
  }

  discard(): void {
    rmSync(this.partial, { force: true });
  }
}

/** Reads one transcript; a malformed line is an error naming the file and the line. */
export function readTranscript(file: string): StoredRun {
  const text = readFileSync(file, "utf8");
  let run: StoredRun | undefined;
  text.split("\n").forEach((raw, index) => {
    if (raw.trim() === "") return;
    let line: TranscriptLine;
    try {
      line = JSON.parse(raw) as TranscriptLine;
    } catch (error) {
      throw new TerrariumError(
        "INVALID_INPUT",
        `${file}:${index + 1}: not JSON (${error instanceof Error ? error.message : String(error)})`,
      );
    }
    if (line.type === "run") {
      if (line.schemaVersion !== USERS_RUN_SCHEMA_VERSION) {
        throw new TerrariumError(
          "INVALID_INPUT",
          `${file}:${index + 1}: transcript schemaVersion ${line.schemaVersion}, this terrarium reads ${USERS_RUN_SCHEMA_VERSION}`,
        );
      }
      const { type: _type, schemaVersion: _version, ...header } = line;
      run = { ...header, turns: [], file };
      return;
    }
    if (!run)
      throw new TerrariumError(
        "INVALID_INPUT",
        `${file}:${index + 1}: the first line must be the run header`,
      );
    if (line.type === "turn") {
      const { type: _type, ...turn } = line;
      run.turns.push(turn);
    } else if (line.type === "end") run.end = line;
    else if (line.type === "judgement") {
      const { type: _type, ...judgement } = line;
      run.judgement = judgement;
    } else {
      throw new TerrariumError(
        "INVALID_INPUT",
        `${file}:${index + 1}: unknown line type ${JSON.stringify((line as { type?: unknown }).type)}`,
      );
    }
  });
  if (!run) throw new TerrariumError("INVALID_INPUT", `${file}: empty transcript`);
  return run;
}

/** Every finished transcript of a run folder, in file-name order (partial files are skipped). */
export function readTranscripts(outDir: string): StoredRun[] {
  const folder = join(outDir, "transcripts");
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((name) => name.endsWith(".jsonl"))
    .sort()
    .map((name) => readTranscript(join(folder, name)));
}
