/**
 * Owns the contract between an algorithm's Lua fragments (`<algorithm>.lua.ts`, one file per
 * algorithm, named by its registry row) and RedisStore's one compiler (@sluice/redis
 * lua/compile.ts), which frames them into every script shape it runs.
 */

/** What a flat script's frame tells an algorithm's flat body, and the writes it provides. */
export interface LuaFrame {
  /** Where the state lives: keys of their own, or fields of packed hashes. */
  readonly layout: 'keys' | 'packed'
  /** One call decides several requests, the body once for each. */
  readonly batch: boolean
  /** The policy, when the script has it as constants; undefined when ARGV passes it. */
  readonly baked: { readonly precision: number; readonly windowMs: number } | undefined
  /** Lua that writes the pair (a, b) expiring at `expiresAt` (deleting it once empty). */
  save(a: string, b: string, expiresAt: string): string
  /**
   * Lua in place of building a ring's `reply` table (sliding-window) from `now`, `newest` and
   * `c` (its non-zero counts by slot), for a frame that writes its replies out itself;
   * undefined: the table is built.
   */
  readonly ringReply?: string
}

/**
 * A flat body's refund (op 'r'): `lua`, then `return nil`. None in a batch script, which only
 * consumes, so that its decisions test no `op` (each test is Lua bytecode Redis runs per
 * decision).
 */
export const refundBranch = (frame: Pick<LuaFrame, 'batch'>, lua: string): string =>
  frame.batch ? '' : `if op == 'r' then\n  ${lua}\n  return nil\nend\n`

/** Lua `op == 'p' or ` where the script may peek; nothing in a batch (see refundBranch). */
export const peekOr = (frame: Pick<LuaFrame, 'batch'>): string =>
  frame.batch ? '' : "op == 'p' or "

/** Lua `op == 'c' and ` where the script may do more than consume; nothing in a batch. */
export const consumeAnd = (frame: Pick<LuaFrame, 'batch'>): string =>
  frame.batch ? '' : "op == 'c' and "

/**
 * One algorithm's Lua, mirroring its TypeScript transitions. Every name it reads at run time
 * (`load_pair`, `save_pair`, `call`, `int`, `ALG`, and in flat bodies `op`, `cost`, `now`,
 * `limit`, `window`, `burst`, `precision`, `maxd`, `slack`, `key`, `extra`, `server`, a
 * pair's `sa`, `sb`, `int_text(n)`, an integer's text formatted once per call, and
 * `text_int(s)`, its inverse, with their memo tables `int_texts` and `text_ints` for a hot
 * site to read first) is defined by the frame around it.
 */
export interface LuaFragments {
  /**
   * The generic scripts' module (several policies, rewards, penalties): sets `ALG.<code>` to a
   * table of load, look, apply, refund, penalize and save.
   */
  readonly module: string
  /** Lua a generic script holding this algorithm defines once, before the modules. */
  readonly shared?: string
  /** A pair whose core state vector is (sb, sa): the packed layout stores that order. */
  readonly swapped?: boolean
  /** A flat script's Lua before its frame: once per call, shared by a batch's decisions. */
  flatSetup?(frame: LuaFrame): string
  /**
   * A flat script's body for one policy, between the frame's head (inputs, clock, the block,
   * and a pair's state read into `sa`, `sb`) and its tail (a batch's loop). It returns the
   * reply its registry row names (ReplyShape).
   */
  flat(frame: LuaFrame): string
  /**
   * The flat body in steps, for a flat script of several policies (all-or-nothing: every
   * policy's `look` runs before any policy's `apply`); absent (a log), such plans take the
   * generic script. Each step runs after the frame's head, in the policy's own scope, and
   * neither returns nor writes but where it says.
   */
  steps?(frame: LuaFrame): FlatSteps
}

/** A flat body's steps (LuaFragments.steps), in the names of its flat body. */
export interface FlatSteps {
  /** Reads what the head did not (a ring), in the scope `look` and `apply` see. */
  readonly read: string
  /** A timed refund (op 'r'): its writes, after `read`. */
  readonly refund: string
  /** Consume or peek: sets `reply`, the policy's reply, and for a consume `fits`; no write. */
  readonly look: string
  /** An admitted consume of cost > 0 (every policy fits): its writes, after `look`. */
  readonly apply: string
}

/**
 * An algorithm's Lua for wide policies (isWide), where its narrow Lua's doubles cannot follow:
 * a generic module on limbs (`<algorithm>.wide.lua.ts`), run by RedisStore's wide script.
 */
export interface WideLuaFragments {
  /** Its code in ARGV, apart from the narrow module's. */
  readonly code: string
  /** Sets `ALG.<code>` as LuaFragments.module does. */
  readonly module: string
  /** Defined once before the modules: the limb arithmetic and the wide meter. */
  readonly shared: string
}
