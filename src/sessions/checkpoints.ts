/**
 * When a store writes a snapshot whole instead of as its changes: the one policy the SQLite and Postgres
 * stores share (the memory store keeps its own, measured in its own units).
 */
export interface CheckpointPolicy {
  /** At most this many change-only snapshots in a row. */
  maxChain: number;
  /** A checkpoint once the changes since the last one outweigh this share of its size. */
  maxChangeRatio: number;
}

/**
 * A checkpoint once the changes since the last one outweigh it, or after 10,000 of them. A state that
 * grows with every call (a map of transfers) is then written whole further and further apart, so the
 * bytes written per call stay flat; a cold read applies at most a checkpoint's worth of changes, in one pass.
 */
export const DEFAULT_CHECKPOINTS: CheckpointPolicy = { maxChain: 10_000, maxChangeRatio: 1 };

/** Small states are not checkpointed more often than every 4 KB of changes. */
const MIN_CHAIN_BYTES = 4096;

/**
 * Whether a snapshot whose changes take `changeBytes` may extend the chain since the last checkpoint
 * (`n` snapshots, `bytes` of changes, the checkpoint `size` bytes long) rather than be a checkpoint.
 */
export function extendsChain(
  policy: CheckpointPolicy,
  chain: { n: number; bytes: number; size: number },
  changeBytes: number,
): boolean {
  return (
    chain.n < policy.maxChain &&
    chain.bytes + changeBytes <= Math.max(MIN_CHAIN_BYTES, chain.size * policy.maxChangeRatio)
  );
}
