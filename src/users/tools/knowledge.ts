import { readdir, readFile, stat } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { TerrariumError } from "../../core/errors.js";
import { SCENARIO_LIMITS } from "../scenario/schema.js";
import { Bm25Index, type Bm25Options } from "./bm25.js";
import { type Chunk, type ChunkOptions, chunkText } from "./chunk.js";
import { htmlToText, looksLikeHtml } from "./html.js";
import { defineUserTool, type UserTool } from "./types.js";

/** One knowledge document: where it came from and its text. */
export interface KnowledgeDocument {
  source: string;
  text: string;
}

export interface RetrievedChunk {
  id: string;
  source: string;
  headings: string[];
  text: string;
  score: number;
}

export interface KnowledgeBaseOptions extends ChunkOptions, Bm25Options {}

/**
 * A scenario's knowledge, chunked and indexed with BM25 (see {@link Bm25Index} for the formula and
 * {@link tokenize} for the tokenizer). A chunk's headings are indexed with its text, so a question naming
 * a section finds that section's paragraphs.
 */
export class KnowledgeBase {
  readonly chunks: readonly Chunk[];
  private readonly index: Bm25Index;

  constructor(documents: readonly KnowledgeDocument[], options: KnowledgeBaseOptions = {}) {
    const chunks: Chunk[] = [];
    for (const document of documents) chunks.push(...chunkText(document.text, document.source, options));
    this.chunks = chunks;
    this.index = new Bm25Index(
      chunks.map((c) => [...c.headings, c.text].join("\n")),
      options,
    );
  }

  /** The best `k` chunks for `query`, highest score first; chunks sharing no word with it are left out. */
  search(query: string, k = 5): RetrievedChunk[] {
    return this.index.search(query, k).map(({ index, score }) => {
      const chunk = this.chunks[index] as Chunk;
      return { ...chunk, headings: [...chunk.headings], score };
    });
  }
}

/** File types read as knowledge; others in a folder are skipped. */
const TEXT_FILES = /\.(?:md|markdown|txt|text|html?|xhtml|json|ya?ml|csv|tsv|rst)$/i;

/**
 * Largest knowledge file read, in bytes (larger ones are an error: knowledge is meant to be read whole).
 * The scenario loader's limit, so a document `users generate` accepts is one a scenario can cite.
 */
export const MAX_KNOWLEDGE_FILE_BYTES = SCENARIO_LIMITS.maxKnowledgeFileBytes;

/**
 * Reads knowledge from files and folders (recursively, text-like files in name order). HTML becomes
 * text. Each document's `source` is the path relative to `baseDir` when given, else as resolved.
 */
export async function loadKnowledgeFiles(
  paths: readonly string[],
  options: { baseDir?: string } = {},
): Promise<KnowledgeDocument[]> {
  const documents: KnowledgeDocument[] = [];
  for (const path of paths) {
    const full = resolve(options.baseDir ?? ".", path);
    for (const file of await listTextFiles(full, true)) {
      const source = options.baseDir ? relative(options.baseDir, file) : file;
      documents.push({ source, text: await readTextFile(file) });
    }
  }
  return documents;
}

/** The text-like files at `path` (itself, if a file), sorted by path. */
export async function listTextFiles(path: string, explicit = false): Promise<string[]> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (error) {
    throw new TerrariumError("FILE_UNREADABLE", `cannot read ${path}: ${(error as Error).message}`, {
      where: { file: path },
      cause: error,
    });
  }
  if (info.isFile()) return explicit || TEXT_FILES.test(path) ? [path] : [];
  if (!info.isDirectory()) return [];
  const entries = await readdir(path, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const files: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith(".")) continue;
    const child = join(path, entry.name);
    if (entry.isDirectory()) files.push(...(await listTextFiles(child)));
    else if (entry.isFile() && TEXT_FILES.test(entry.name)) files.push(child);
  }
  return files;
}

async function readTextFile(file: string): Promise<string> {
  const info = await stat(file);
  if (info.size > MAX_KNOWLEDGE_FILE_BYTES) {
    throw new TerrariumError(
      "FILE_UNREADABLE",
      `${file} is ${info.size} bytes; knowledge files are limited to ${MAX_KNOWLEDGE_FILE_BYTES}`,
      { where: { file } },
    );
  }
  const text = await readFile(file, "utf8");
  return looksLikeHtml(file, text) ? htmlToText(text) : text;
}

export interface RetrievalToolOptions {
  name?: string;
  description?: string;
  /** Most results one call may ask for (default 10); the default `k` is 3. */
  maxK?: number;
}

/** `search_knowledge {query, k?}`: BM25 over the scenario's knowledge. */
export function createRetrievalTool(knowledge: KnowledgeBase, options: RetrievalToolOptions = {}): UserTool {
  const maxK = options.maxK ?? 10;
  return defineUserTool<{ query: string; k?: number }>({
    name: options.name ?? "search_knowledge",
    description:
      options.description ??
      "Search what you know (your documents, FAQs, policies, order details) for passages relevant to a query.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", minLength: 1, description: "words to look for" },
        k: { type: "integer", minimum: 1, maximum: maxK, description: "how many passages (default 3)" },
      },
      required: ["query"],
      additionalProperties: false,
    },
    run({ query, k }) {
      const results = knowledge.search(query, k ?? 3);
      return {
        status: "ok",
        data: { results },
        message:
          results.length === 0
            ? "nothing in your knowledge matches this query"
            : `${results.length} passage(s) found`,
      };
    },
  });
}
