/**
 * Generator of a tiny random-weight llama GGUF model (~430 KB) for tests.
 *
 * No package we can install ships real LLM weights, so tests of the local llama code path
 * (node-llama-cpp) run against this file instead. Answer quality is meaningless; what matters is that
 * llama.cpp accepts the file, tokenizes a ChatML prompt, and produces grammar-constrained output.
 *
 * The "steered" variant (default) makes every generation schema-friendly and deterministic: one
 * embedding dimension is held at a constant through the whole residual stream, the final norm keeps
 * only that dimension, and each token's output row turns it into a fixed per-token preference. The
 * logits are then `preference / rms(hidden)`, a positive rescaling of a fixed ranking, so at
 * temperature 0 the grammar always picks its highest-ranked allowed token, whatever the prompt.
 * With purely random weights (`steered: false`) grammar output is valid JSON but often not
 * schema-valid (huge exponents, invalid UTF-8 from lone high bytes).
 *
 * Layout reference: GGUF v3, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
 */
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export interface TinyGgufOptions {
  /** PRNG seed; the same options always give the same bytes. Default 1. */
  seed?: number;
  /** Steer outputs towards schema-valid JSON (see the module comment). Default true. */
  steered?: boolean;
}

// Model shape. Small enough to load in milliseconds, yet a real llama graph (GQA: 4 query heads
// share 2 key/value heads) so the code path is the same as for a real model.
const EMBD = 64;
const FFN = 128;
const BLOCKS = 2;
const HEADS = 4;
const HEADS_KV = 2;
const HEAD_DIM = EMBD / HEADS;
const KV_DIM = HEAD_DIM * HEADS_KV;
const CONTEXT = 512;
const ALIGNMENT = 32;

// The embedding dimension that carries the steering signal in the steered variant.
const STEER_DIM = 0;

// A few merges so the BPE path is exercised; llama.cpp requires each merge result to be a token.
const MERGES: ReadonlyArray<readonly [string, string]> = [
  ["Ġ", "t"],
  ["i", "n"],
  ["e", "r"],
  ["n", "a"],
  ["na", "m"],
];
const CONTROL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;
const TOKEN_TYPE_NORMAL = 1;
const TOKEN_TYPE_CONTROL = 3;

// Standard ChatML; node-llama-cpp recognises it and selects its ChatML wrapper.
const CHAT_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** mulberry32: tiny, fast, and good enough for weights; Math.random is not seedable. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * GPT-2's byte-to-unicode table: printable bytes map to themselves, the rest to code points from
 * U+0100 upwards, so every byte is a visible character and the "gpt2" tokenizer can decode it.
 */
function gpt2ByteChars(): string[] {
  const printable = (b: number) =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const chars: string[] = [];
  let next = 256;
  for (let b = 0; b < 256; b++) chars.push(String.fromCodePoint(printable(b) ? b : next++));
  return chars;
}

interface Vocab {
  tokens: string[];
  types: number[];
  /** Byte value of each single-byte token, undefined for merges and control tokens. */
  bytes: Array<number | undefined>;
}

function buildVocab(): Vocab {
  const tokens = gpt2ByteChars();
  const bytes: Array<number | undefined> = tokens.map((_, b) => b);
  for (const [left, right] of MERGES) {
    tokens.push(left + right);
    bytes.push(undefined);
  }
  const types = tokens.map(() => TOKEN_TYPE_NORMAL);
  for (const control of CONTROL_TOKENS) {
    tokens.push(control);
    types.push(TOKEN_TYPE_CONTROL);
    bytes.push(undefined);
  }
  return { tokens, types, bytes };
}

/**
 * Fixed preference of the steered model for each token. Only the ranking among the tokens a
 * grammar allows matters. The quote outranks everything, so strings close as soon as the schema
 * lets them (minLength) and never run on when it sets no maxLength; other JSON punctuation comes
 * next, so numbers stop after one digit; then printable ASCII and the merges in a seed-dependent
 * order (picks e.g. true/false and the digit); the optional space between JSON tokens is unlikely.
 * Bytes >= 0x80 (lone UTF-8 pieces), control characters (newline and tab too) and the
 * number-extending `e`, `E`, `.` are pushed far down. The tiers are far apart so llama.cpp's
 * default repeat penalty (positive logits divided by 1.1) cannot reorder them.
 */
function tokenPreference(vocab: Vocab, token: number, rand: () => number): number {
  const jitter = rand(); // drawn for every token so the sequence does not depend on the branch
  const byte = vocab.bytes[token];
  if (byte === undefined) return vocab.types[token] === TOKEN_TYPE_CONTROL ? 0 : 4 + jitter;
  const ch = String.fromCharCode(byte);
  if (byte >= 0x80 || byte < 0x20 || byte === 0x7f || "eE.".includes(ch)) return -20;
  if (ch === '"') return 12;
  if ("{}[]:,".includes(ch)) return 10 + jitter;
  if (ch === " ") return 1 + jitter;
  return 4 + jitter;
}

interface Tensor {
  name: string;
  /** ggml order: the input (fastest-varying) dimension first. */
  dims: number[];
  data: Float32Array;
}

function buildTensors(vocab: Vocab, seed: number, steered: boolean): Tensor[] {
  const rand = mulberry32(seed);
  const nVocab = vocab.tokens.length;

  // Uniform in [-1, 1) / sqrt(fan-in) keeps activations around unit scale through the layers.
  const matrix = (name: string, fanIn: number, fanOut: number): Tensor => {
    const data = new Float32Array(fanIn * fanOut);
    const scale = 1 / Math.sqrt(fanIn);
    for (let i = 0; i < data.length; i++) data[i] = (rand() * 2 - 1) * scale;
    return { name, dims: [fanIn, fanOut], data };
  };
  const ones = (name: string): Tensor => ({ name, dims: [EMBD], data: new Float32Array(EMBD).fill(1) });
  // Row r of a [fanIn, fanOut] matrix is output r: zeroing it stops the layer writing to that dim.
  const zeroOutputRow = (t: Tensor, row: number) => {
    const fanIn = t.dims[0] ?? 0;
    t.data.fill(0, row * fanIn, (row + 1) * fanIn);
  };

  const tokenEmbd = matrix("token_embd.weight", EMBD, nVocab);
  if (steered) for (let v = 0; v < nVocab; v++) tokenEmbd.data[v * EMBD + STEER_DIM] = 1;
  const tensors: Tensor[] = [tokenEmbd];

  for (let n = 0; n < BLOCKS; n++) {
    const attnOut = matrix(`blk.${n}.attn_output.weight`, EMBD, EMBD);
    const ffnDown = matrix(`blk.${n}.ffn_down.weight`, FFN, EMBD);
    // The residual stream only changes through these two projections; keeping them off the steering
    // dimension holds it at exactly 1 up to the final norm, so its sign can never flip.
    if (steered) {
      zeroOutputRow(attnOut, STEER_DIM);
      zeroOutputRow(ffnDown, STEER_DIM);
    }
    tensors.push(
      ones(`blk.${n}.attn_norm.weight`),
      matrix(`blk.${n}.attn_q.weight`, EMBD, EMBD),
      matrix(`blk.${n}.attn_k.weight`, EMBD, KV_DIM),
      matrix(`blk.${n}.attn_v.weight`, EMBD, KV_DIM),
      attnOut,
      ones(`blk.${n}.ffn_norm.weight`),
      matrix(`blk.${n}.ffn_gate.weight`, EMBD, FFN),
      matrix(`blk.${n}.ffn_up.weight`, EMBD, FFN),
      ffnDown,
    );
  }

  const outputNorm = ones("output_norm.weight");
  const output = matrix("output.weight", EMBD, nVocab);
  if (steered) {
    // After RMS norm the steering dim is 1/rms(hidden) > 0 and every other dim is dropped, so
    // logit(v) = preference(v) / rms(hidden): the same ranking at every position.
    outputNorm.data.fill(0);
    outputNorm.data[STEER_DIM] = 1;
    output.data.fill(0);
    for (let v = 0; v < nVocab; v++) output.data[v * EMBD + STEER_DIM] = tokenPreference(vocab, v, rand);
  }
  tensors.push(outputNorm, output);
  return tensors;
}

// GGUF metadata value types.
const GGUF_U32 = 4;
const GGUF_I32 = 5;
const GGUF_F32 = 6;
const GGUF_BOOL = 7;
const GGUF_STRING = 8;
const GGUF_ARRAY = 9;
const GGML_TYPE_F32 = 0;

type MetaValue =
  | { type: "u32" | "i32" | "f32"; value: number }
  | { type: "bool"; value: boolean }
  | { type: "string"; value: string }
  | { type: "i32[]"; value: number[] }
  | { type: "string[]"; value: string[] };

/** Little-endian byte sink; GGUF is little-endian regardless of the host. */
class Writer {
  private readonly chunks: Buffer[] = [];
  length = 0;

  private push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.length += chunk.length;
  }
  u32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    this.push(b);
  }
  i32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    this.push(b);
  }
  u64(n: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    this.push(b);
  }
  f32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(n);
    this.push(b);
  }
  bool(v: boolean): void {
    this.push(Buffer.from([v ? 1 : 0]));
  }
  /** GGUF strings: u64 byte length, then UTF-8 bytes, no terminator. */
  str(s: string): void {
    const bytes = Buffer.from(s, "utf8");
    this.u64(bytes.length);
    this.push(bytes);
  }
  f32s(data: Float32Array): void {
    const b = Buffer.alloc(data.length * 4);
    for (let i = 0; i < data.length; i++) b.writeFloatLE(data[i] ?? 0, i * 4);
    this.push(b);
  }
  padTo(alignment: number): void {
    const pad = (alignment - (this.length % alignment)) % alignment;
    if (pad > 0) this.push(Buffer.alloc(pad));
  }
  toBuffer(): Buffer {
    return Buffer.concat(this.chunks, this.length);
  }
}

function writeMeta(w: Writer, key: string, meta: MetaValue): void {
  w.str(key);
  switch (meta.type) {
    case "u32":
      w.u32(GGUF_U32);
      w.u32(meta.value);
      break;
    case "i32":
      w.u32(GGUF_I32);
      w.i32(meta.value);
      break;
    case "f32":
      w.u32(GGUF_F32);
      w.f32(meta.value);
      break;
    case "bool":
      w.u32(GGUF_BOOL);
      w.bool(meta.value);
      break;
    case "string":
      w.u32(GGUF_STRING);
      w.str(meta.value);
      break;
    case "i32[]":
      w.u32(GGUF_ARRAY);
      w.u32(GGUF_I32);
      w.u64(meta.value.length);
      for (const v of meta.value) w.i32(v);
      break;
    case "string[]":
      w.u32(GGUF_ARRAY);
      w.u32(GGUF_STRING);
      w.u64(meta.value.length);
      for (const v of meta.value) w.str(v);
      break;
  }
}

/** Builds the GGUF file in memory. Deterministic: same options, same bytes. */
export function buildTinyGguf(options: TinyGgufOptions = {}): Buffer {
  const seed = options.seed ?? 1;
  const steered = options.steered ?? true;
  const vocab = buildVocab();
  const tensors = buildTensors(vocab, seed, steered);
  const u32 = (value: number) => ({ type: "u32", value }) as const;
  const f32 = (value: number) => ({ type: "f32", value }) as const;

  const metadata: Array<[string, MetaValue]> = [
    ["general.architecture", { type: "string", value: "llama" }],
    ["general.name", { type: "string", value: `terrarium-tiny-${steered ? "steered" : "random"}-${seed}` }],
    ["general.alignment", u32(ALIGNMENT)],
    ["general.file_type", u32(0)], // all F32
    ["llama.context_length", u32(CONTEXT)],
    ["llama.embedding_length", u32(EMBD)],
    ["llama.block_count", u32(BLOCKS)],
    ["llama.feed_forward_length", u32(FFN)],
    ["llama.attention.head_count", u32(HEADS)],
    ["llama.attention.head_count_kv", u32(HEADS_KV)],
    ["llama.attention.layer_norm_rms_epsilon", f32(1e-5)],
    ["llama.rope.dimension_count", u32(HEAD_DIM)],
    ["llama.rope.freq_base", f32(10000)],
    ["llama.vocab_size", u32(vocab.tokens.length)],
    ["tokenizer.ggml.model", { type: "string", value: "gpt2" }],
    ["tokenizer.ggml.pre", { type: "string", value: "default" }],
    ["tokenizer.ggml.tokens", { type: "string[]", value: vocab.tokens }],
    ["tokenizer.ggml.token_type", { type: "i32[]", value: vocab.types }],
    ["tokenizer.ggml.merges", { type: "string[]", value: MERGES.map(([l, r]) => `${l} ${r}`) }],
    ["tokenizer.ggml.bos_token_id", u32(vocab.tokens.indexOf("<|endoftext|>"))],
    ["tokenizer.ggml.eos_token_id", u32(vocab.tokens.indexOf("<|im_end|>"))],
    ["tokenizer.ggml.add_bos_token", { type: "bool", value: false }],
    ["tokenizer.chat_template", { type: "string", value: CHAT_TEMPLATE }],
  ];

  const w = new Writer();
  const magic = Buffer.from("GGUF", "ascii");
  w.u32(magic.readUInt32LE(0));
  w.u32(3); // version
  w.u64(tensors.length);
  w.u64(metadata.length);
  for (const [key, value] of metadata) writeMeta(w, key, value);

  // Tensor infos carry offsets relative to the (aligned) start of the data section.
  let offset = 0;
  for (const t of tensors) {
    w.str(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(GGML_TYPE_F32);
    w.u64(offset);
    offset += t.data.length * 4;
    offset += (ALIGNMENT - (offset % ALIGNMENT)) % ALIGNMENT;
  }
  w.padTo(ALIGNMENT);
  for (const t of tensors) {
    w.f32s(t.data);
    w.padTo(ALIGNMENT);
  }
  return w.toBuffer();
}

// Write-then-rename so parallel test workers never load a half-written file.
function writeAtomically(path: string, bytes: Buffer): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, bytes);
  renameSync(tmp, path);
}

/** Writes the model to `path` (creating parent directories) and returns the path. */
export function writeTinyGguf(path: string, options: TinyGgufOptions = {}): string {
  writeAtomically(path, buildTinyGguf(options));
  return path;
}

const written = new Set<string>();

/**
 * Path of the model in a shared temp directory, written at most once per process. A file left by an
 * earlier run (or a parallel worker) is reused when its bytes match.
 */
export function tinyGgufPath(options: TinyGgufOptions = {}): string {
  const seed = options.seed ?? 1;
  const variant = (options.steered ?? true) ? "steered" : "random";
  const path = join(tmpdir(), "terrarium-tiny-gguf", `${variant}-${seed}.gguf`);
  if (written.has(path)) return path;
  const bytes = buildTinyGguf({ seed, steered: variant === "steered" });
  // Same size is not enough: an edited generator can keep the size, so compare the bytes too.
  const fresh = existsSync(path) && statSync(path).size === bytes.length && readFileSync(path).equals(bytes);
  if (!fresh) writeAtomically(path, bytes);
  written.add(path);
  return path;
}
