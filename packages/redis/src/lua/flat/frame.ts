/**
 * Owns the frame every flat script shares: its inputs, clock, block check, state read and
 * write, and the batch loop around it (`tail`), each a function of the script's shape
 * (shape.ts). The algorithms' bodies are their Lua fragments (core's `<algorithm>.lua.ts`).
 *
 * Flat scripts for the common case: one policy. First those of the string-state algorithms
 * (gcra, fixed-window, token-bucket, leaky-bucket); sliding-window and sliding-log are at the
 * end, with their own replies (see there). Each comes in two forms: shared, with the driver's
 * KEYS/ARGV contract (see driver.ts) for exactly one policy, and per policy, with the policy
 * baked in as constants and a short ARGV (see `inputs`). Both do the operations 'c', 'p' and
 * 'r' with a time (rewards and penalties go to the generic scripts), with the same state
 * transitions, line for line, as the generic scripts (the same fragments), but inlined: no function is defined and no table built per
 * call, and a call of the string-state ones is at most TIME, two GETs (the block, the state)
 * and one SET PX (or DEL).
 *
 * The reply is one integer (refund: nil; negative: the key is blocked for -reply ms) from which the store computes the five outcome
 * fields with core's own formulas (flat-outcome.ts): the backlog for the meter algorithms,
 * `count * (windowMs + 1) + msToNextWindow` for fixed-window. Every such value is an integer
 * below 2^53 (core caps limit x window at 2^50), so it crosses RESP exactly.
 *
 * State encoding: pair.ts, as the generic scripts.
 */
import type { LuaFrame } from '@sluice/core/web'
import { asInteger, decodePair, integerText, pairText, TEXT_INT } from '../pair'
import { bakedInteger, type BakedPolicy, type FlatShape, type Variant } from '../shape'
import { PACKED_HEAD, packedInputs, packedSave } from './packed-frame'
import { BLOCKS_DECLARED } from './flags'
import { HOLD_REPEATED } from './hold'

/** The policy a shape has baked in; undefined when ARGV passes it. */
const bakedOf = (shape: FlatShape): BakedPolicy | undefined =>
  shape.policy === 'passed' ? undefined : shape.policy

/**
 * A Cluster's block key, not declared (see driver.ts): named from the state key's hash tag, so
 * in its slot.
 */
export const BLOCK_KEY = `string.sub(KEYS[1], 1, string.find(KEYS[1], '}:', 1, true) + 1) .. 'b'`

/**
 * Lua 5.1 (Redis, Valkey) has `unpack`, 5.2 and later (Dragonfly's 5.4) `table.unpack`. In that
 * order: Redis 7 refuses to read a global that does not exist, a missing table field is nil.
 */
export const UNPACK = 'table.unpack or unpack'

/**
 * The inputs as locals. Shared script (no `baked`): the driver's KEYS and ARGV (see driver.ts)
 * for one policy, the algorithm code checked. Per-policy script: the policy as constants and a
 * short ARGV, every entry optional so the store sends only up to the last one that is not the
 * default. Both take the key's state in KEYS[1] and its block in KEYS[2] (see driver.ts for why
 * a Cluster leaves the block out):
 *
 * ARGV[1]  extra: sliding-log request id (consume), ms ago (refund); default ''
 * ARGV[2]  op: 'c' | 'p' | 'r'; default 'c'
 * ARGV[3]  now in ms; default (or '') Redis TIME
 * ARGV[4]  cost; default 1
 * ARGV[5]  maxDelayMs; default 0
 *
 * Batch script (per policy, `batch`; standalone Redis only): consumes only, m decisions decided
 * one after another in the order given (see `tail`), each as the per-policy script would alone:
 *
 * KEYS[i]          the state key of decision i (1 <= i <= m)
 * KEYS[m + i]      its block key, only when ARGV[3] is 'b'
 * KEYS[#KEYS]      `<prefix>:blocks` (see ANY_BLOCK)
 * ARGV[1]      sliding-log: the batch's request id (decision i uses `<id>/<i>`); else ''
 * ARGV[2]      now in ms, for every decision of the batch; '' for Redis TIME
 * ARGV[3]      flags: 'b' the block keys are declared (see ANY_BLOCK), 'r' some state key
 *              comes more than once (see HOLD_REPEATED); '', 'b', 'r' or 'br'
 * ARGV[3 + i]  cost of decision i; all absent when every cost is 1
 *
 * The packed layout (`packed`, lua/packed.ts): the shared script takes the driver's KEYS and
 * ARGV for one policy with the fields after them (see packedInputs); the batch script takes
 * KEYS[i] the hash of decision i, KEYS[m + i] its block's hash (always declared) and
 * `<prefix>:blocks` last (PACKED_ANY_BLOCK), ARGV[2] now, and from ARGV[4] three per decision:
 * its field, its block's field, its cost.
 */
function inputs(shape: FlatShape): string {
  const { code } = shape.variant
  const baked = bakedOf(shape)
  const batch = shape.calls === 'batch'
  const packed = shape.layout === 'packed'
  if (baked === undefined) {
    if (batch) throw new Error('a batch script needs a baked policy')
    return `
if ARGV[7] ~= '${code}' then return redis.error_reply('ERR sluice: algorithm ' .. tostring(ARGV[7]) .. ' is not in this script') end
local key, bkey, op, extra = KEYS[1], KEYS[2] or ${BLOCK_KEY}, ARGV[1], ARGV[4]
local now = tonumber(ARGV[2])
local cost, slack, maxd = tonumber(ARGV[3]), tonumber(ARGV[5]), tonumber(ARGV[6])
local limit, window, burst, precision = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
${packed ? packedInputs(shape.variant, 'single') : ''}`
  }
  if (packed && !batch) throw new Error('a packed script of one call takes its policy in ARGV')
  const policy = `local limit, window, burst, precision = ${bakedInteger(baked.limit)}, ${bakedInteger(baked.windowMs)}, ${bakedInteger(baked.burst)}, ${bakedInteger(baked.precision)}`
  if (batch) {
    return `
local op, slack, maxd = 'c', ${bakedInteger(baked.slackMs)}, 0
${policy}
local now = tonumber(ARGV[2])
${packed ? `local extra = ''\n${packedInputs(shape.variant, 'batch')}` : ''}`
  }
  return `
local key, bkey, extra, op = KEYS[1], KEYS[2] or ${BLOCK_KEY}, ARGV[1] or '', ARGV[2] or 'c'
local now = tonumber(ARGV[3])
local cost, slack, maxd = tonumber(ARGV[4]) or 1, ${bakedInteger(baked.slackMs)}, tonumber(ARGV[5]) or 0
${policy}
`
}

/**
 * `int_text(n)`, an integer as text (`%d`), and `pair_text(a, b)`, a pair's int64 text
 * (lua/pair.ts), each formatted once per script call; and `text_int(s)` (lua/pair.ts), a stored
 * integer read once per call. Every number Lua formats is a `sprintf`
 * in Redis, about 1.7k instructions, and a state write took three of them: a third of what
 * Redis spent on a gcra decision beyond the state ceiling. The decisions of a batch share
 * `now`, so their writes share values: a TTL, a fixed window's start and count, a meter's tat
 * and remainder after one request on an idle key (bench/instructions-redis.js).
 */
export const INT_TEXTS = `${TEXT_INT}local int_texts, pair_texts = {}, {}
local function int_text(n)
  local text = int_texts[n]
  if text == nil then
    text = string.format('%d', n)
    int_texts[n] = text
  end
  return text
end
local function pair_text(a, b)
  local row = pair_texts[b]
  if row == nil then
    row = {}
    pair_texts[b] = row
  end
  local text = row[a]
  if text == nil then
    text = ${integerText('a', 'b')}
    row[a] = text
  end
  return text
end
`

/** Reads `now` (Redis TIME unless given); `server` says which. */
function clock(shape: FlatShape): string {
  return `
local floor, ceil, tonumber = math.floor, math.ceil, tonumber
local unpack = ${UNPACK}
local call = redis.call
${INT_TEXTS}${inputs(shape)}local server = not now
if server then
  local t = call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end
${shape.calls === 'batch' ? batchHead(shape) : ''}`
}

/** The batch script's start of `one`: what it declares before (see ANY_BLOCK, HOLD_REPEATED). */
function batchHead(shape: FlatShape): string {
  // Packed: every block hash declared, read while `<prefix>:blocks` exists (PACKED_ANY_BLOCK);
  // a key that repeats is read again (no holding).
  if (shape.layout === 'packed')
    return `${PACKED_ANY_BLOCK}local m = (#KEYS - 1) / 2
local function one(key, bkey, field, bfield, cost)
`
  const hold = holdsRepeated(shape.variant) ? HOLD_REPEATED : ''
  return `${ANY_BLOCK}${hold}local function one(key, bkey, extra, cost)\n`
}

/**
 * Whether a batch script of this algorithm holds repeated keys (see HOLD_REPEATED): all whose
 * state is one string or one hash, not a log.
 */
const holdsRepeated = (variant: Variant): boolean => variant.state !== 'log'

/**
 * Batch scripts only (standalone Redis): whether any key of the prefix may be blocked, from
 * `<prefix>:blocks` (see BLOCK in block.ts), which lives at least as long as every block set
 * through it. While it is absent, the decisions skip the GET of their key's block: most of the
 * time no key is blocked, and that GET was about a sixth of a decision's time in Redis.
 *
 * The store declares the block keys only while it knows that `<prefix>:blocks` exists: 32 key
 * names a batch that Node builds and writes and Redis parses, for keys that are read only
 * then. A batch sent without them while it exists decides nothing and writes nothing; it
 * replies with the flag's PTTL (an integer, where decisions reply with an array), and the
 * store sends it again with them and keeps declaring them for that long (see batch.ts). No key
 * is touched that is not declared.
 */
export const ANY_BLOCK = `local declared = ${BLOCKS_DECLARED}
local m = #KEYS - 1
if declared then m = floor(#KEYS / 2) end
local blocks = call('EXISTS', KEYS[#KEYS]) == 1
if blocks and not declared then return call('PTTL', KEYS[#KEYS]) end
`

/**
 * A packed batch's ANY_BLOCK: its KEYS end with `<prefix>:blocks`, which every block the store
 * sets keeps alive (RedisStore.block writes the key's block of its own, and so the flag, before
 * the packed block field), and its decisions read their block fields only while it exists. The
 * block hashes are always declared, so a batch never has to be sent again.
 */
export const PACKED_ANY_BLOCK = `local blocks = redis.call('EXISTS', KEYS[#KEYS]) == 1
`

/**
 * The end of a batch script (see `inputs`): the decision above, as the function `one`, for
 * each key in turn, in the order given, each with its own cost and sliding-log request id.
 * A decision that fails (a key of the wrong type) fails alone: its reply is the error, and
 * the others are decided as they would be without it. It wrote nothing: every write follows
 * the reads that can fail. One pcall covers the run of decisions from `from` on, and another
 * starts after a failure: a pcall per decision cost Redis 0.4 us each.
 */
export function tail(shape: FlatShape): string {
  if (shape.calls !== 'batch') return ''
  const packed = shape.layout === 'packed'
  const extra = requestId(shape.variant)
  const decide = packed
    ? `local j = 3 * i
    ${readCost('ARGV[j + 3]')}out[i] = one(KEYS[i], KEYS[m + i], ARGV[j + 1], ARGV[j + 2], cost)`
    : `${extra.lua}${readCost('ARGV[i + 3]')}-- Block keys are read only while the blocks flag exists, and declared then.
    out[i] = one(KEYS[i], declared and KEYS[m + i], ${extra.name}, cost)`
  // On Redis's clock the batch ends with the time it decided at, once for all its decisions.
  return `end
local id, out, n = ARGV[1], {}, m
${eachAlone(decide)}${holdsRepeated(shape.variant) && !packed ? 'flush()\n' : ''}if server then out[n + 1] = now end
return out
`
}

/**
 * Lua: batch decision i's sliding-log request id (`<id>/<i>`), and the name that holds it; the
 * other algorithms' consumes do not read it, and get the batch's ('').
 */
const requestId = (variant: Variant): { lua: string; name: string } =>
  variant.state === 'log'
    ? {
        lua: `local extra = id
    if id ~= '' then extra = id .. '/' .. i end
    `,
        name: 'extra',
      }
    : { lua: '', name: 'id' }

/**
 * Lua: the local `cost`, a batch decision's cost, from its argument `arg` (absent: 1). A cost
 * of 1 (most decisions of a batch that sends costs) is read without `tonumber`, a `strtod` in
 * Redis, some 4% of a fixed-window decision's instructions.
 */
export const readCost = (arg: string): string =>
  `local cost = ${arg}
    if cost == nil or cost == '1' then cost = 1 else cost = tonumber(cost) or 1 end
    `

/**
 * A batch's loop (see tail): `decide` for each i from 1 to `n`, setting `out[i]`; a decision
 * that fails sets its error there instead (or as `failed` puts it), and the loop goes on after
 * it (see tail for why one pcall covers a run of decisions).
 */
export function eachAlone(
  decide: string,
  failed = (error: string): string => `out[done] = ${error}`,
): string {
  return `local done = 0
local function run(from)
  for i = from, n do
    ${decide}
    done = i
  end
end
while done < n do
  local ok, err = pcall(run, done + 1)
  if ok then break end
  done = done + 1
  ${failed("redis.error_reply(type(err) == 'table' and err.err or tostring(err))")}
end
`
}

/**
 * Lua: whether a decision reads its key's block. A batch only consumes, and reads it while the
 * blocks flag exists (see ANY_BLOCK); a script of one call, unless it refunds.
 */
export const readsBlock = (batch: boolean): string => (batch ? 'blocks' : "op ~= 'r'")

/** clock, then the key's block (consume, peek): while it holds the reply is -(ms until it ends). */
function prologue(shape: FlatShape): string {
  const packed = shape.layout === 'packed'
  const read = packed ? `block_field(bkey, bfield)` : `redis.pcall('GET', bkey)`
  return `${clock(shape)}if ${readsBlock(shape.calls === 'batch')} then
  local blocked = ${read}
  if ${packed ? 'blocked' : "type(blocked) == 'string'"} then
    local wait = tonumber(blocked) - now
    if wait > 0 then return -wait end
  end
end
`
}

/**
 * The frame's start: prologue, and for a pair its state read into `sa`, `sb` (a log or a ring
 * reads its own).
 */
export function head(shape: FlatShape): string {
  if (shape.variant.state !== 'pair') return prologue(shape)
  if (shape.layout === 'packed') return `${prologue(shape)}${PACKED_HEAD}`
  // One MGET of the block and the state measured no cheaper than two GETs, and would need a
  // second path for the moment of a migration when the cluster refuses it.
  return `${prologue(shape)}local v = call('GET', key)
local sa, sb = 0, 0
${decodePair('v', 'sa', 'sb')}`
}

/** What the algorithm's flat body sees of its frame: the shape, and how a pair is written. */
export function frameOf(shape: FlatShape): LuaFrame {
  return {
    layout: shape.layout,
    batch: shape.calls === 'batch',
    baked: bakedOf(shape),
    save: shape.layout === 'packed' ? packedSave : saveKey,
  }
}

/** Writes the pair (a, b) expiring at `expires_at` to its key (save_pair in prelude.ts). */
export function saveKey(a: string, b: string, expiresAt: string): string {
  const px = `'PX', int_text(${expiresAt} - now + slack)`
  return `
if ${expiresAt} <= now then
  call('DEL', key)
elseif ${asInteger(b)} then
  call('SET', key, pair_text(${a}, ${b}), ${px})
else
  call('SET', key, ${pairText(a, b)}, ${px})
end
`
}
