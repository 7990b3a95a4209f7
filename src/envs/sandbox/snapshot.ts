import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { WasmMemory } from "./heap.js";

/**
 * A copy of the sandbox engine's whole state, taken once a runtime, a context and the prelude are ready,
 * and written back after every call. QuickJS keeps everything it has (runtime, context, atoms, objects,
 * the allocator's own bookkeeping) in the WebAssembly memory, so writing those bytes back returns the
 * engine to exactly the state it had before the call: whatever a tool changed (globals, built-ins,
 * prototypes, pending jobs, memory it leaked) is gone, at the cost of copying some hundred kilobytes
 * instead of building a runtime and a context (about a millisecond) for every call.
 *
 * What is copied: the static data (the C globals, the allocator's state) and the heap up to its last used
 * byte. The C stack between them is not: between calls no C frame is live, so its contents are dead.
 * The stack's place is read from the WebAssembly file (the stack pointer's initial value is the stack's
 * top and the heap's start; the stack is the release build's 5 MiB below it). When the file cannot be
 * read or does not look like that, everything below the heap's last used byte is copied instead (slower,
 * as exact). Bytes past the last used one (to the end of its 4 KiB chunk) are free space at the top of the
 * allocator's heap: its record of that space is in the static data and in the chunk's header, which lies
 * before the last used byte, and it never reads the space's contents (memory it hands out is cleared where
 * it must be), so what a call leaves there needs no restoring.
 */

/** The release build's C stack (emscripten's STACK_SIZE). */
const STACK_BYTES = 5 * 1024 * 1024;
const PAGE_BYTES = 65_536;

export interface MemoryLayout {
  /** End of the static data (the first byte of the C stack). */
  staticEnd: number;
  /** Start of the heap (the top of the C stack). */
  heapStart: number;
}

/** Copies everything when the layout is unknown: [0, heapStart) then is the static part. */
const WHOLE: MemoryLayout = { staticEnd: 0, heapStart: 0 };

let layout: MemoryLayout | undefined;

/** The layout of the release-sync build, read once per thread from its WebAssembly file. */
export function memoryLayout(): MemoryLayout {
  if (!layout) {
    try {
      const file = createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm");
      layout = readLayout(readFileSync(file));
    } catch {
      layout = WHOLE;
    }
  }
  return layout;
}

/**
 * Reads the stack pointer's initial value (the module's first global) and the end of its data segments.
 * Exported for the tests; answers WHOLE for anything unexpected.
 */
export function readLayout(bytes: Uint8Array): MemoryLayout {
  let at = 8; // magic and version
  const byte = () => {
    if (at >= bytes.length) throw new RangeError("truncated");
    return bytes[at++] as number;
  };
  const unsigned = () => {
    let value = 0;
    let shift = 0;
    for (;;) {
      const b = byte();
      value += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (!(b & 0x80)) return value;
    }
  };
  const signed32 = () => {
    let value = 0;
    let shift = 0;
    let b: number;
    do {
      b = byte();
      value |= (b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    return shift < 32 && b & 0x40 ? value | (-1 << shift) : value;
  };
  let stackTop: number | undefined;
  let dataEnd = 0;
  while (at < bytes.length) {
    const id = byte();
    const size = unsigned();
    const end = at + size;
    if (id === 6) {
      // Global section: the first global is emscripten's stack pointer, an i32 set by i32.const.
      unsigned(); // count
      byte(); // value type
      byte(); // mutability
      if (byte() === 0x41) stackTop = signed32();
    } else if (id === 11) {
      const count = unsigned();
      for (let i = 0; i < count; i++) {
        const flags = unsigned();
        if (flags !== 0) return WHOLE; // passive or indexed segments: not the layout described above
        if (byte() !== 0x41) return WHOLE;
        const offset = signed32();
        if (byte() !== 0x0b) return WHOLE;
        const length = unsigned();
        dataEnd = Math.max(dataEnd, offset + length);
        at += length;
      }
    }
    at = end;
  }
  if (stackTop === undefined || stackTop - STACK_BYTES < dataEnd) return WHOLE;
  return { staticEnd: stackTop - STACK_BYTES, heapStart: stackTop };
}

export class HeapSnapshot {
  readonly staticPart: Uint8Array;
  readonly heapPart: Uint8Array;
  readonly heapStart: number;

  /** Takes the snapshot now. Call it between calls into the engine, never from inside one. */
  constructor(
    private readonly memory: WasmMemory,
    layout: MemoryLayout = memoryLayout(),
  ) {
    const bytes = new Uint8Array(memory.buffer);
    const heapEnd = Math.min(bytes.length, chunkEnd(lastUsedByte(bytes)));
    this.heapStart = Math.min(layout.heapStart, heapEnd);
    this.staticPart = bytes.slice(0, layout.staticEnd);
    this.heapPart = bytes.slice(this.heapStart, heapEnd);
  }

  /** Bytes written back by each restore. */
  get size(): number {
    return this.staticPart.length + this.heapPart.length;
  }

  /** Where the copied part of the heap ends. */
  get heapEnd(): number {
    return this.heapStart + this.heapPart.length;
  }

  /** Puts the engine back exactly as it was when the snapshot was taken. */
  restore(): void {
    const bytes = new Uint8Array(this.memory.buffer);
    bytes.set(this.staticPart, 0);
    bytes.set(this.heapPart, this.heapStart);
  }
}

const CHUNK_BYTES = 4096;

/**
 * A snapshot taken a little after another one (its base): the engine's memory once a call restored from
 * the base has done a little more (compiled a tool, engine.ts), kept as the chunks that differ from the
 * base, so it costs a few kilobytes instead of a whole copy. The memory past the base's heap is free space
 * whose bytes nothing reads, but may hold whatever earlier calls left there: clearTail zeroes it before the
 * work, so that afterwards everything written there is what the work left (kept whole, up to its last
 * non-zero byte). Restoring writes the base, then the chunks; or, while the snapshot keeps a whole copy
 * (keepWhole: the engine keeps them for the images it uses most), that copy, writing each byte once.
 */
export class DerivedSnapshot {
  private readonly chunks: Array<{ at: number; bytes: Uint8Array }> = [];
  /** How far past the base's heap the kept memory reaches. */
  readonly tail: number;
  /** The base with the chunks written in, while kept (see keepWhole). */
  private whole: { staticPart: Uint8Array; heapPart: Uint8Array } | undefined;

  /** Zeroes the memory past the base's heap (as it was when the base was taken). */
  static clearTail(memory: WasmMemory, base: HeapSnapshot): void {
    new Uint8Array(memory.buffer).fill(0, base.heapEnd);
  }

  /** Takes the snapshot now, like HeapSnapshot's constructor; clearTail must have come before the work. */
  constructor(
    private readonly memory: WasmMemory,
    readonly base: HeapSnapshot,
  ) {
    const bytes = new Uint8Array(memory.buffer);
    this.keepChanged(bytes, 0, base.staticPart);
    this.keepChanged(bytes, base.heapStart, base.heapPart);
    const tailStart = base.heapEnd;
    const used = lastUsedByte(bytes);
    const tailEnd = used < tailStart ? tailStart : Math.min(bytes.length, chunkEnd(used));
    this.tail = tailEnd - tailStart;
    if (tailEnd > tailStart) this.chunks.push({ at: tailStart, bytes: bytes.slice(tailStart, tailEnd) });
  }

  /** Bytes kept beside the base. */
  get size(): number {
    let total = 0;
    for (const chunk of this.chunks) total += chunk.bytes.length;
    return total;
  }

  restore(): void {
    const bytes = new Uint8Array(this.memory.buffer);
    const whole = this.whole;
    if (whole) {
      bytes.set(whole.staticPart, 0);
      bytes.set(whole.heapPart, this.base.heapStart);
      return;
    }
    this.base.restore();
    for (const chunk of this.chunks) bytes.set(chunk.bytes, chunk.at);
  }

  /** Keeps a whole copy of the snapshot (the base's size and the tail), so that restoring is one pass. */
  keepWhole(): void {
    if (this.whole) return;
    const base = this.base;
    const staticPart = base.staticPart.slice();
    const heapPart = new Uint8Array(base.heapPart.length + this.tail);
    heapPart.set(base.heapPart);
    for (const chunk of this.chunks) {
      if (chunk.at < staticPart.length) staticPart.set(chunk.bytes, chunk.at);
      else heapPart.set(chunk.bytes, chunk.at - base.heapStart);
    }
    this.whole = { staticPart, heapPart };
  }

  /** Drops the whole copy (restoring writes the base and the chunks again). */
  dropWhole(): void {
    this.whole = undefined;
  }

  /** Whether a whole copy is kept. */
  get keptWhole(): boolean {
    return this.whole !== undefined;
  }

  /** Keeps the chunks of memory from `at` that differ from `before` (the base's copy of that stretch). */
  private keepChanged(bytes: Uint8Array, at: number, before: Uint8Array): void {
    const now = Buffer.from(bytes.buffer, bytes.byteOffset + at, before.length);
    const was = Buffer.from(before.buffer, before.byteOffset, before.length);
    for (let offset = 0; offset < before.length; offset += CHUNK_BYTES) {
      const end = Math.min(before.length, offset + CHUNK_BYTES);
      if (now.compare(was, offset, end, offset, end) !== 0) {
        this.chunks.push({ at: at + offset, bytes: bytes.slice(at + offset, at + end) });
      }
    }
  }
}

const ZERO_PAGE = Buffer.alloc(PAGE_BYTES);

/** The end of the 4 KiB chunk that holds the byte at `at`. */
function chunkEnd(at: number): number {
  return (Math.floor(at / CHUNK_BYTES) + 1) * CHUNK_BYTES;
}

/** The index of the last non-zero byte (memory past the allocator's top has never been written). */
function lastUsedByte(bytes: Uint8Array): number {
  let end = bytes.length;
  // Whole pages first (a native comparison), then the last page that holds anything, byte by byte.
  while (end >= PAGE_BYTES) {
    const page = Buffer.from(bytes.buffer, bytes.byteOffset + end - PAGE_BYTES, PAGE_BYTES);
    if (!page.equals(ZERO_PAGE)) break;
    end -= PAGE_BYTES;
  }
  for (let i = end - 1; i >= 0; i--) if (bytes[i] !== 0) return i;
  return 0;
}
