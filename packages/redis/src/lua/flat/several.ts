/**
 * Owns the flat scripts of several policies of one key (SeveralShape): each policy's flat body
 * in its steps (core's LuaFragments.steps), inlined with the policy baked in, so a decision
 * builds no table but its reply and calls no function per policy. All-or-nothing: policy i's
 * scope nests policy i + 1's, so every policy is read and tested (`look`) before any is
 * written, and each one's `apply` runs as its scope closes, on the locals its `look` left.
 * Two policies of one plan never share a state here (route.ts sends those to the generic
 * script), so the order of the writes does not matter.
 *
 * Single call (keys of their own): KEYS[1..n] the states, KEYS[n + 1] the block (not on a
 * Cluster, see driver.ts); ARGV as a per-policy flat script's (extra, op, now, cost, maxDelayMs,
 * each optional: `inputs` in frame.ts). Packed (lua/packed.ts): KEYS[1] the hash of every
 * state, KEYS[2] the block's (not on a Cluster); ARGV[1..n] the fields, ARGV[n + 1] the block's
 * field, then those five. Replies as the generic scripts (driver.ts): one reply per policy,
 * each its flat script's, and after them, for an admitted consume on Redis's clock, the time it
 * was counted at; a blocked key's -(ms until the block ends) for every policy; nil for a refund.
 *
 * Batch (consumes; standalone Redis), as the flat batch scripts with n keys per decision:
 * keys of their own, KEYS[n * (i - 1) + j] state j of decision i (1 <= i <= m), then (ARGV[3]
 * 'b' or 'br') the block of each, and `<prefix>:blocks` last (ANY_BLOCK); ARGV[2] now, ARGV[3]
 * the flags of the flat batch scripts ('r': some key repeats, see HOLD_REPEATED), ARGV[3 + i]
 * the costs, all absent when every cost is 1. Packed: KEYS the hash of each decision (its
 * states all live there), then the block's hash of each, then `<prefix>:blocks`
 * (PACKED_ANY_BLOCK); ARGV[2] now, and from ARGV[4] n + 2 per decision: its fields, its block's
 * field, its cost. Replies with every decision's replies in one flat array (FLAT_OUT).
 */
import { consumeAnd, refundBranch, type LuaFrame } from '@sluice/core/web'
import { decodePair } from '../pair'
import { packedFields, packedRing } from '../packed'
import { bakedInteger, type SeveralShape, type Variant } from '../shape'
import {
  BLOCK_KEY,
  eachAlone,
  INT_TEXTS,
  PACKED_ANY_BLOCK,
  readCost,
  readsBlock,
  saveKey,
  UNPACK,
} from './frame'
import { BLOCKS_DECLARED } from './flags'
import { holdRepeated } from './hold'
import { packedSave } from './packed-frame'

/**
 * The packed layout keeps every limit of a client key in one hash (cas/packed-places.ts), so a
 * decision reads its fields with one `HMGET` (`fetchFields`), and each policy's scope sets
 * `current` to its field's value, which the field functions read (packedFields' `read`;
 * `current` is declared before them): no table of the batch's fields to grow and look up.
 */
const FETCHED = 'current'

/**
 * And writes them with one `HSET`: put_field (lua/packed.ts) holds each write until
 * `put_fields` writes them all and raises the hash's TTL once, to the longest-lived field's.
 * Defined after packedFields and before packedRing, so the ring's save_ring calls this one.
 * Expired states are still deleted at once (HDEL): a decision writes each field once.
 */
const BUFFERED_PUTS = `local puts, put_n, put_ttl = {}, 0, 0
local function put_field(key, field, value, ttl, now)
  puts[put_n + 1], puts[put_n + 2] = field, value
  put_n = put_n + 2
  if ttl > put_ttl then put_ttl = ttl end
end
local function put_fields(key, now)
  if put_n == 0 then return end
  if redis.call('HSET', key, unpack(puts, 1, put_n)) > 0 then sweep(key, now) end
  if redis.call('PTTL', key) < put_ttl then redis.call('PEXPIRE', key, string.format('%d', put_ttl)) end
  put_n, put_ttl = 0, 0
end
`

/**
 * Lua: a packed decision's fields (`fields`, Lua expressions) read from its hash `key` into
 * `fetched`, and no write held (a decision that failed may have left some).
 */
function fetchFields(key: string, fields: readonly string[]): string {
  return `local fetched = call('HMGET', ${key}, ${fields.join(', ')})
put_n, put_ttl = 0, 0
`
}

/** The Lua of a script of `shape`. */
export function severalLua(shape: SeveralShape): string {
  const n = shape.variants.length
  if (n < 2 || n !== shape.policies.length) throw new Error('several policies, one variant each')
  const batch = shape.calls === 'batch'
  return `${inputs(shape)}${setups(shape)}${batch ? batchHead(shape) : ''}${decision(shape)}${batch ? batchTail(shape) : ''}`
}

/** The inputs as locals, and the clock (Redis TIME unless `now` is given). */
function inputs(shape: SeveralShape): string {
  const n = shape.variants.length
  const slack = bakedInteger(shape.policies[0].slackMs)
  const packed = shape.layout === 'packed'
  const ring = shape.variants.some((v) => v.state === 'ring')
  const fields = packed
    ? `local current\n${packedFields(FETCHED)}${BUFFERED_PUTS}${ring ? packedRing(FETCHED) : ''}`
    : ''
  let own: string
  if (shape.calls === 'batch') {
    own = `local op, extra, slack, maxd = 'c', '', ${slack}, 0
local now = tonumber(ARGV[2])
`
  } else {
    // The packed layout's fields come first: the rest are optional, each sent only up to the
    // last that is not its default (pushOwnArgs in script-args.ts).
    const a = packed ? n + 1 : 0
    own = `local bkey, extra, op = KEYS[${packed ? 2 : n + 1}] or ${BLOCK_KEY}, ARGV[${a + 1}] or '', ARGV[${a + 2}] or 'c'
local now = tonumber(ARGV[${a + 3}])
local cost, slack, maxd = tonumber(ARGV[${a + 4}]) or 1, ${slack}, tonumber(ARGV[${a + 5}]) or 0
${packed ? `local bfield = ARGV[${n + 1}]\n` : ''}`
  }
  return `
local floor, ceil, tonumber = math.floor, math.ceil, tonumber
local unpack = ${UNPACK}
local call = redis.call
${INT_TEXTS}${own}${fields}local server = not now
if server then
  local t = call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end
`
}

/**
 * Each policy's frame: the shape's layout, the policy as its constants; a batch's ring writes
 * its reply straight into the batch's (RING_INTO_FLAT).
 */
function frameOf(shape: SeveralShape, i: number): LuaFrame {
  const batch = shape.calls === 'batch'
  return {
    layout: shape.layout,
    batch,
    baked: shape.policies[i],
    save: shape.layout === 'packed' ? packedSave : saveKey,
    ...(batch ? { ringReply: RING_INTO_FLAT } : {}),
  }
}

/**
 * A ring's reply written into the batch's (FLAT_OUT): its length, `now`, the newest bucket,
 * then slot and count of each non-zero count, with no table of its own.
 */
const RING_INTO_FLAT = `local at = f + 1
flat[at + 1], flat[at + 2] = now, newest
f = at + 2
for slot, value in pairs(c) do
  flat[f + 1], flat[f + 2] = slot, value
  f = f + 2
end
flat[at] = f - at
`

/** What each variant defines once per call (flatSetup), each text once. */
function setups(shape: SeveralShape): string {
  const texts = new Set<string>()
  shape.variants.forEach((v, i) => texts.add(v.lua.flatSetup?.(frameOf(shape, i)) ?? ''))
  return [...texts].join('')
}

/**
 * Batch: how many decisions (`m`), whether blocks are read (ANY_BLOCK in frame.ts, with n
 * keys per decision; packed: PACKED_ANY_BLOCK, as its flat batch), held repeated keys (keys of
 * their own), and the decision as the function `one`.
 */
function batchHead(shape: SeveralShape): string {
  const n = shape.variants.length
  if (shape.layout === 'packed') {
    return `${PACKED_ANY_BLOCK}local m = (#KEYS - 1) / 2
${FLAT_OUT}local function one(base, bkey, fbase, cost)
local bfield = ARGV[fbase + ${n + 1}]
`
  }
  return `local declared = ${BLOCKS_DECLARED}
local m = floor((#KEYS - 1) / ${n})
if declared then m = floor((#KEYS - 1) / ${n + 1}) end
local blocks = call('EXISTS', KEYS[#KEYS]) == 1
if blocks and not declared then return call('PTTL', KEYS[#KEYS]) end
${holdRepeated(`m * ${n}`)}${FLAT_OUT}local function one(base, bkey, extra, cost)
`
}

/** Batch: `one` for each decision in turn (eachAlone in frame.ts), held keys written at the end. */
function batchTail(shape: SeveralShape): string {
  const n = shape.variants.length
  const decide =
    shape.layout === 'packed'
      ? `local j = 3 + ${n + 2} * (i - 1)
    ${readCost(`ARGV[j + ${n + 2}]`)}seg = f
    one(i, KEYS[m + i], j, cost)`
      : `${readCost('ARGV[i + 3]')}seg = f
    one(${n} * (i - 1), declared and KEYS[m * ${n} + i], '', cost)`
  return `end
local n = m
${eachAlone(decide, FAILED)}${shape.layout === 'packed' ? '' : 'flush()\n'}return flat
`
}

/**
 * A batch's reply, one flat array (severalReplies in replies.ts): Redis turns each table of a
 * reply into RESP by probing it for seven fields (err, ok, double, ...) and giving it a
 * deferred length: some 11k instructions of a three-limit packed decision when each decision
 * and its ring had a table of its own (docs/benchmarks.md). So the
 * decisions write into `flat` in turn, from `seg`: a header, then each policy's reply, a number
 * or (where bit i - 1 of the header is set) the length of policy i's table then its items, and
 * (bit n) the time the decision was counted at.
 */
const FLAT_OUT = 'local flat, f, seg = {}, 0, 0\n'

/** A decision that failed is its error alone, in place of what it had written (eachAlone). */
const FAILED = (error: string): string => `for k = seg + 1, f do flat[k] = nil end
  f = seg + 1
  flat[f] = ${error}`

/**
 * A decision's reply table, sized at once for its n replies and, on Redis's clock, the time
 * (`{ nil, ... }`: Lua 5.1 and 5.4 size the array from the constructor): filled from empty,
 * it was grown twice or three times per decision.
 */
const replySlots = (n: number): string =>
  Array<string>(n + 1)
    .fill('nil')
    .join(', ')

/**
 * One decision: the block (consume, peek), then a refund policy by policy, or every policy's
 * look nested in the one before, the applies as the scopes close (see the file's comment).
 */
function decision(shape: SeveralShape): string {
  const n = shape.variants.length
  const batch = shape.calls === 'batch'
  const base = batch ? 'base + ' : ''
  const packed = shape.layout === 'packed'
  // Packed: every policy's field is in the decision's one hash, read at once, written at once.
  const hash = batch ? 'KEYS[base]' : 'KEYS[1]'
  const read = packed ? 'block_field(bkey, bfield)' : `redis.pcall('GET', bkey)`
  const blocked = batch
    ? `flat[f + 1] = 0\n${Array.from({ length: n }, (_, i) => `flat[f + ${i + 2}] = -wait\n`).join('')}f = f + ${n + 1}\nreturn`
    : `return { ${Array.from({ length: n }, () => '-wait').join(', ')} }`
  const fields = Array.from({ length: n }, (_, i) =>
    batch ? `ARGV[fbase + ${i + 1}]` : `ARGV[${i + 1}]`,
  )
  const scopes = shape.variants.map((variant, i) => {
    const p = shape.policies[i]
    const place = packed
      ? `current = fetched[${i + 1}]
local key, field, swapped = ${hash}, ${fields[i]}, ${variant.lua.swapped === true}`
      : `local key = KEYS[${base}${i + 1}]`
    const head =
      variant.state !== 'pair'
        ? ''
        : packed
          ? `local sa, sb = read_field(key, field, now)\nif swapped then sa, sb = sb, sa end\n`
          : `local v = call('GET', key)\nlocal sa, sb = 0, 0\n${decodePair('v', 'sa', 'sb')}`
    const steps = variant.lua.steps?.(frameOf(shape, i))
    if (steps === undefined) throw new Error(`no steps for ${variant.code}`)
    const open = `${place}
local limit, window, burst, precision = ${bakedInteger(p.limit)}, ${bakedInteger(p.windowMs)}, ${bakedInteger(p.burst)}, ${bakedInteger(p.precision)}
${head}${steps.read}`
    return { open, steps }
  })
  const fetch = packed ? fetchFields(hash, fields) : ''
  const put = packed ? `put_fields(${hash}, now)\n` : ''
  const refund = scopes.map(({ open, steps }) => `do\n${open}${steps.refund}end\n`).join('')
  let nest = ''
  for (let i = n - 1; i >= 0; i--) {
    const { open, steps } = scopes[i]
    const tested = `${batch ? emitted(shape.variants[i]) : `out[${i + 1}] = reply\n`}if not fits then admitted = false end\n`
    const go = i === n - 1 ? `go = admitted and ${consumeAnd({ batch })}cost > 0\n` : ''
    nest = `do\n${open}${steps.look}${tested}${nest}${go}if go then\n${steps.apply}end\nend\n`
  }
  return `if ${readsBlock(batch)} then
  local blocked = ${read}
  if ${packed ? 'blocked' : "type(blocked) == 'string'"} then
    local wait = tonumber(blocked) - now
    if wait > 0 then ${blocked} end
  end
end
${fetch}${refundBranch({ batch }, refund + put)}${batch ? 'local head = f + 1\nf = head\nlocal admitted, go = true, false' : `local out, admitted, go = { ${replySlots(n)} }, true, false`}
${nest}${put}${batch ? flatEnd(shape) : `if go and server then out[${n + 1}] = now end\nreturn out\n`}`
}

/** Batch: policy i's reply into `flat` (FLAT_OUT); a ring's is there already (RING_INTO_FLAT). */
function emitted(variant: Variant): string {
  return variant.state === 'ring' ? '' : 'f = f + 1\nflat[f] = reply\n'
}

/** Batch: the decision's header (FLAT_OUT), and the time it was counted at after its replies. */
function flatEnd(shape: SeveralShape): string {
  const n = shape.variants.length
  const mask = shape.variants.reduce((sum, v, i) => (v.state === 'ring' ? sum + 2 ** i : sum), 0)
  return `flat[head] = ${mask}
if go and server then
  flat[head] = ${mask + 2 ** n}
  f = f + 1
  flat[f] = now
end
`
}
