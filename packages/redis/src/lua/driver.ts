/**
 * The part of every script that reads the arguments and runs the algorithms: all policies of
 * one key are decided in one call, and only when every one admits the request is it applied
 * to any of them (all-or-nothing; a rejected request writes nothing).
 *
 * KEYS[i]   state of policy i (1 <= i <= n): `<prefix>:{<escaped key>}:<policy key id>`, or with
 *           per-policy state keys `<prefix>:{<escaped key>}:<escaped keys[i]>:<policy key id>`
 *           (the policy key id: its id written short, see policyKeyId in keys.ts)
 * KEYS[n+1] the key's block, `<prefix>:{<escaped key>}:b` (see block.ts); not on a Cluster
 *           (below). Every key has the one hash tag, so one slot.
 * ARGV[1]   'c' consume | 'p' peek | 'r' refund | 'x' penalize
 * ARGV[2]   now in ms, or '' to read Redis TIME (time: 'server')
 * ARGV[3]   cost: a positive integer (peek: 0 or more)
 * ARGV[4]   consume, penalize: a request id unique per request (sliding-log members); refund:
 *           how many ms before now the refunded request was admitted, '' for a reward (from the
 *           newest usage)
 * ARGV[5]   ms added to every TTL (time: 'client' clock tolerance; 0 with server time)
 * ARGV[6]   maxDelayMs: reservations on the meters ('0': none)
 * ARGV[7..] five per policy: algorithm code (fw sw sl tb lb gc), limit, windowMs, burst, precision;
 *           n, the number of policies, is read from their count. The packed layout's script
 *           (packed.ts) takes six, the policy's field last, and after them the block's field;
 *           its KEYS are the hashes, the block's last.
 *
 * Where each state and the block live, and how a state is read and written: KEY_STATE in
 * prelude.ts, or PACKED_STATE in packed.ts; the algorithms only see `place(i)`.
 *
 * Consume and peek first GET the key's block. Every key a script touches is declared in KEYS,
 * as servers that check it require (Dragonfly refuses an undeclared key), except one: on a
 * Cluster the block is named from KEYS[1]'s hash tag instead. A key that does not exist among
 * the declared keys of a multi-key call makes Redis Cluster answer TRYAGAIN while the slot
 * migrates, so a declared block key (almost never present) would stall every decision of a
 * resharded key until the move ends. Same slot by construction; redis.pcall, so a GET that the
 * cluster refuses mid-migration (the block already moved, the state not yet) reads as no block.
 *
 * Returns (consume, peek) one reply per policy, the one its flat script would give (see
 * flat/frame.ts): the state as decide reads it (the backlog of a meter, a fixed window's count and
 * wait, a sliding window's counters, a log's summary), before this request. The store computes
 * each outcome from it with core's own decide (flat-outcome.ts); the scripts only test
 * admission. While the key is blocked every policy answers -(ms until it ends) and nothing is
 * read or written. An admitted consume on Redis TIME adds the time it was counted at, after the
 * policies' replies. Refund and penalize return nothing.
 */
import { eachAlone } from './flat/frame'

/**
 * The driver as a function of KEYS and ARGV (module-level locals, prelude.ts, which a batch
 * sets per decision): one call's decision, its reply returned.
 */
const DRIVER_FUNCTION = `
local function driver()
  local op = ARGV[1]
  local now = tonumber(ARGV[2])
  local server = not now
  if server then
    -- Allowed before writes because Redis >= 5 replicates a script's effects, not the script
    -- (redis.replicate_commands() would cost 1.5 us a call for nothing there).
    local t = call('TIME')
    now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
  end
  local cost = tonumber(ARGV[3])
  SLACK = tonumber(ARGV[5])
  MAXD = tonumber(ARGV[6])
  NOW = now

  local n = floor((#ARGV - 6) / PER)
  if op == 'c' or op == 'p' then
    local blocked = block_end(n)
    if blocked then
      local wait = blocked - now
      if wait > 0 then
        local out = {}
        for i = 1, n do out[i] = -wait end
        return out
      end
    end
  end

  local policies, states, places, loaded = {}, {}, {}, {}
  for i = 1, n do
    local j = 6 + (i - 1) * PER
    local alg = ALG[ARGV[j + 1]]
    if not alg then return redis.error_reply('ERR sluice: algorithm ' .. ARGV[j + 1] .. ' is not in this script') end
    policies[i] = {
      alg = alg,
      limit = tonumber(ARGV[j + 2]),
      window = tonumber(ARGV[j + 3]),
      burst = tonumber(ARGV[j + 4]),
      precision = tonumber(ARGV[j + 5]),
    }
    -- Two policies with the same id share one key and one state, as they do in MemoryStore.
    places[i] = place(i)
    local id = place_id(i)
    if loaded[id] == nil then loaded[id] = alg.load(places[i], policies[i]) end
    states[i] = loaded[id]
  end

  if op == 'r' then
    -- No time given: a reward, taken from the newest usage.
    local at = nil
    if ARGV[4] ~= '' then at = now - tonumber(ARGV[4]) end
    for i = 1, n do
      local p = policies[i]
      p.alg.refund(states[i], now, p, cost, at)
      p.alg.save(places[i], states[i], now, p)
    end
    return nil
  end

  if op == 'x' then
    REQUEST = ARGV[4]
    for i = 1, n do
      local p = policies[i]
      p.alg.penalize(states[i], now, p, cost)
      p.alg.save(places[i], states[i], now, p)
    end
    return nil
  end

  local out, admitted = {}, true
  for i = 1, n do
    local fits, reply = policies[i].alg.look(states[i], now, policies[i], cost)
    if not fits then admitted = false end
    out[i] = reply
  end

  if op == 'c' and admitted and cost > 0 then
    REQUEST = ARGV[4]
    for i = 1, n do
      local p = policies[i]
      p.alg.apply(states[i], now, p, cost)
      p.alg.save(places[i], states[i], now, p)
    end
    -- On Redis's clock, when the request was counted (StoreResult.at).
    if server then out[n + 1] = now end
  end
  return out
end
`

/** The generic script of one call: the driver on the call's own KEYS and ARGV. */
export const DRIVER = `${DRIVER_FUNCTION}return driver()
`

/**
 * The batch form of a generic script (standalone Redis only; consumes): m decisions, each as
 * the script would decide it alone, one after another in the order given, in one call.
 *
 * KEYS  every decision's KEYS, one after another
 * ARGV  per decision: how many KEYS it has, how many ARGV, then its ARGV
 *
 * Replies with each decision's reply, in order. A decision that fails (a key of the wrong
 * type) fails alone, its reply the error, as in the flat batch scripts (flat/frame.ts).
 */
export const DRIVER_BATCH = `${DRIVER_FUNCTION}local all_keys, all_argv, decisions = KEYS, ARGV, {}
local k, a = 1, 1
while a <= #all_argv do
  local nk, na = tonumber(all_argv[a]), tonumber(all_argv[a + 1])
  decisions[#decisions + 1] = { k, nk, a + 2, na }
  k, a = k + nk, a + 2 + na
end
local out, n = {}, #decisions
${eachAlone(`local d = decisions[i]
    KEYS = { unpack(all_keys, d[1], d[1] + d[2] - 1) }
    ARGV = { unpack(all_argv, d[3], d[3] + d[4] - 1) }
    SEQ = 0
    out[i] = driver()`)}return out
`
