/**
 * Owns the flat scripts of one wide policy (WideFlatShape): the policy's limbs module
 * (core's `<algorithm>.wide.lua.ts`, the same functions the wide generic script runs) on the
 * policy baked in as one table, built once per call, with none of the driver's work per
 * decision (its policy table, its copies of KEYS and ARGV, a TIME and a block GET each).
 * State: the wide layout's `:v` keys (lua/wide.ts), so this script, the wide generic script
 * and compare-and-set read what each other wrote.
 *
 * Single call: the per-policy flat scripts' KEYS and ARGV (`inputs` in frame.ts): KEYS[1] the
 * state, KEYS[2] the block (not on a Cluster); ARGV extra (a timed refund's ms ago), op ('c',
 * 'p', 'r'), now, cost, maxDelayMs, each optional. Batch (consumes; standalone Redis): the
 * flat batch scripts' contract (`tail` in frame.ts), `<prefix>:blocks` read as ANY_BLOCK does,
 * repeated keys held as HOLD_REPEATED holds them. The reply of a consume or peek is the
 * backlog, a number below 2^52 and its five limbs past it (flat-outcome.ts reads either with
 * core's BigInt formulas); a blocked
 * key's is -(ms until the block ends); a refund's nil. As the flat batches, a batch on
 * Redis's clock ends with the time it decided at.
 */
import { bakedInteger, type WideFlatShape } from '../shape'
import { PRELUDE } from '../prelude'
import { WIDE_STATE } from '../wide'
import { ANY_BLOCK, BLOCK_KEY, eachAlone, readCost } from './frame'
import { HOLD_REPEATED } from './hold'

/** The Lua of a script of `shape`. */
export function wideFlatLua(shape: WideFlatShape): string {
  const batch = shape.calls === 'batch'
  const { lua, code } = shape.variant
  // In a batch the held `call` (HOLD_REPEATED) comes before the state functions that use it.
  return [
    PRELUDE,
    batch ? batchInputs(shape) : singleInputs(shape),
    batch ? `${ANY_BLOCK}${HOLD_REPEATED}` : '',
    WIDE_STATE,
    lua.shared ?? '',
    lua.module,
    decision(shape, code),
    batch ? batchTail : 'return one(KEYS[1], KEYS[2] or ' + BLOCK_KEY + ', cost)\n',
  ].join('')
}

/** The clock: Redis TIME unless `now` is given, read once per call. */
const CLOCK = `local server = not now
if server then
  local t = call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end
NOW = now
`

function singleInputs(shape: WideFlatShape): string {
  return `local extra, op = ARGV[1] or '', ARGV[2] or 'c'
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4]) or 1
SLACK, MAXD = ${bakedInteger(shape.policy.slackMs)}, tonumber(ARGV[5]) or 0
${CLOCK}`
}

function batchInputs(shape: WideFlatShape): string {
  return `local op, extra = 'c', ''
local now = tonumber(ARGV[2])
SLACK, MAXD = ${bakedInteger(shape.policy.slackMs)}, 0
${CLOCK}`
}

/**
 * `one(key, bkey, cost)`: the block (consume, peek; in a batch only while `<prefix>:blocks`
 * exists), then the module's load, look and, for an admitted consume, apply and save; a timed
 * refund: refund and save at `now - extra` (`extra` '': a reward).
 */
function decision(shape: WideFlatShape, code: string): string {
  const { limit, windowMs, burst, precision } = shape.policy
  const readsBlock = shape.calls === 'batch' ? "op ~= 'r' and blocks and bkey" : "op ~= 'r'"
  return `local alg = ALG.${code}
local P = { alg = alg, limit = ${bakedInteger(limit)}, window = ${bakedInteger(windowMs)}, burst = ${bakedInteger(burst)}, precision = ${bakedInteger(precision)} }
local function one(key, bkey, cost)
  if ${readsBlock} then
    local blocked = redis.pcall('GET', bkey)
    if type(blocked) == 'string' then
      local wait = tonumber(blocked) - now
      if wait > 0 then return -wait end
    end
  end
  local s = alg.load(key, P)
  if op == 'r' then
    -- No time given: a reward, taken from the newest usage (as the driver does).
    local at = nil
    if extra ~= '' then at = now - tonumber(extra) end
    alg.refund(s, now, P, cost, at)
    alg.save(key, s, now, P)
    return nil
  end
  local fits, reply = alg.look(s, now, P, cost)
  if fits and op == 'c' and cost > 0 then
    alg.apply(s, now, P, cost, reply)
    alg.save(key, s, now, P)
  end
  return reply
end
`
}

/** A batch's loop (eachAlone), the held keys written, and the time it decided at. */
const batchTail = `local out, n = {}, m
${eachAlone(`${readCost('ARGV[i + 3]')}out[i] = one(KEYS[i], declared and KEYS[m + i], cost)`)}flush()
if server then out[n + 1] = now end
return out
`
