/**
 * Owns the Lua side of a flat batch script's flags, ARGV[3] (batchFlags in batch.ts writes
 * them): 'b' the block keys are declared (ANY_BLOCK), 'r' some state key comes more than once
 * (HOLD_REPEATED); '', 'b', 'r' or 'br'.
 */

/** Lua: whether the batch declares its block keys. */
export const BLOCKS_DECLARED = "ARGV[3] == 'b' or ARGV[3] == 'br'"

/** Lua: whether some state key of the batch repeats. */
export const KEYS_REPEAT = "ARGV[3] == 'r' or ARGV[3] == 'br'"
