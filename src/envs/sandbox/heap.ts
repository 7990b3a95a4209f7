/**
 * A hard memory limit for guest code. QuickJS's own limit (`setMemoryLimit`) is not enough under
 * Emscripten: QuickJS counts each allocation as its usable size, which Emscripten reports as 0, so the
 * limit only refuses single allocations larger than it, and many small strings or arrays grow the heap
 * without bound (quickjs-emscripten issues #255 and #271).
 *
 * So the sandbox owns the WebAssembly memory and caps it: its `grow` refuses to go past a ceiling while a
 * guest runs, which makes `malloc` return NULL and QuickJS throw "out of memory" inside the guest. Before a
 * call, the free space the heap already has is measured (the largest block `malloc` can return without
 * growing); the guest is left exactly `limit` bytes of it, the rest is held by a ballast allocation, or,
 * when there is less, the heap may grow by the difference. Only one guest runs at a time (the engine is
 * synchronous), so the whole heap is the guest's.
 */

const PAGE_BYTES = 65_536;
/** What the release build itself asks for: 16 MiB to start, 2 GiB at most. */
const INITIAL_PAGES = 256;
const MAXIMUM_PAGES = 32_768;
/** Precision of the free-space measurement. */
const PROBE_STEP_BYTES = 64 * 1024;

/** Thrown (without building a new stack trace each time) when growth is refused; Emscripten catches it. */
const REFUSED = new RangeError("the sandbox's memory limit refused to grow the WebAssembly heap");

/** The part of WebAssembly.Memory used here (the project's type libraries do not declare WebAssembly). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

const WasmMemoryClass = (
  globalThis as unknown as {
    WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory };
  }
).WebAssembly.Memory;

interface Allocator {
  _malloc(size: number): number;
  _free(pointer: number): void;
}

export class HeapGuard {
  readonly memory: WasmMemory;
  /** Whether growth was refused since the guard was last armed: the guest ran out of memory. */
  tripped = false;
  private ceiling = Number.POSITIVE_INFINITY;
  private allocator: Allocator | undefined;

  constructor() {
    const memory = new WasmMemoryClass({ initial: INITIAL_PAGES, maximum: MAXIMUM_PAGES });
    const grow = memory.grow.bind(memory);
    Object.defineProperty(memory, "grow", {
      value: (pages: number): number => {
        if (memory.buffer.byteLength + pages * PAGE_BYTES > this.ceiling) {
          this.tripped = true;
          throw REFUSED;
        }
        return grow(pages);
      },
    });
    this.memory = memory;
  }

  /** Connects the allocator of the module that uses this memory. */
  attach(allocator: Allocator): void {
    this.allocator = allocator;
  }

  /**
   * Limits the heap to `limitBytes` of usable memory from now on; call the returned function to lift it.
   * `free` is the largest free block when the caller knows it (see freeSpace), otherwise it is measured.
   */
  arm(limitBytes: number, free?: number): () => void {
    const allocator = this.allocator;
    if (!allocator) throw new Error("HeapGuard.arm: no allocator attached");
    const size = this.memory.buffer.byteLength;
    this.ceiling = size;
    if (free === undefined) free = this.largestFreeBlock(allocator, size);
    let ballast = 0;
    if (free > limitBytes) {
      ballast = allocator._malloc(free - limitBytes);
    } else {
      this.ceiling = size + (limitBytes - free);
    }
    this.tripped = false;
    let armed = true;
    return () => {
      if (!armed) return;
      armed = false;
      this.ceiling = Number.POSITIVE_INFINITY;
      if (ballast) allocator._free(ballast);
    };
  }

  /** Runs host work (strings handed to the guest) without the cap, so that it never sees a NULL malloc. */
  unguarded<T>(work: () => T): T {
    const saved = this.ceiling;
    this.ceiling = Number.POSITIVE_INFINITY;
    try {
      return work();
    } finally {
      this.ceiling = saved;
    }
  }

  /**
   * The largest allocation that fits in the heap as it is now, without growing it. A caller that brings
   * the heap back to the same state before each call (snapshot.ts) measures once per size of the memory.
   */
  freeSpace(): number {
    const allocator = this.allocator;
    if (!allocator) throw new Error("HeapGuard.freeSpace: no allocator attached");
    const size = this.memory.buffer.byteLength;
    const saved = this.ceiling;
    this.ceiling = size;
    try {
      return this.largestFreeBlock(allocator, size);
    } finally {
      this.ceiling = saved;
    }
  }

  /** The largest allocation that fits without growing the heap (binary search; growth must be refused). */
  private largestFreeBlock(allocator: Allocator, size: number): number {
    let fits = 0;
    let fails = size;
    while (fails - fits > PROBE_STEP_BYTES) {
      const middle = Math.floor((fits + fails) / 2);
      const pointer = allocator._malloc(middle);
      if (pointer) {
        allocator._free(pointer);
        fits = middle;
      } else {
        fails = middle;
      }
    }
    return fits;
  }
}
