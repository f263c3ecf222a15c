/**
 * Owns RedisStore's slots for concurrency limits: one sorted set per client key,
 * `<prefix>:{<key>}:c`, holder -> the time its lease ends. Every script first drops the leases
 * that ended, so a slot of a process that died comes back after its lease, and the key expires
 * with its last lease. One key per script (its hash tag): the same on a Cluster.
 *
 * ARGV[1] of every script: now in ms, or '' to read Redis TIME (time: 'server').
 */
import type { SlotReply, SlotRequest, SlotStore } from '@sluice/core'
import type { ScriptClient } from './client/types'
import { evaluate } from './evaluate'
import { keyStem } from './keys'
import { script } from './lua'
import type { LoadedScript } from './plan'

const NOW = `
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
`

/** ARGV[2] holder, ARGV[3] limit, ARGV[4] leaseMs -> { acquired 0|1, slots taken after }. */
const ACQUIRE = `${NOW}
local taken = redis.call('ZCARD', KEYS[1])
if taken >= tonumber(ARGV[3]) then return {0, taken} end
local lease = tonumber(ARGV[4])
redis.call('ZADD', KEYS[1], now + lease, ARGV[2])
if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
return {1, taken + 1}
`

/** ARGV[2] holder, ARGV[3] leaseMs -> 1 renewed, 0 the lease had ended. */
const RENEW = `${NOW}
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
local lease = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + lease, ARGV[2])
if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
return 1
`

/** ARGV[2] holder -> 1 released, 0 it held none. */
const RELEASE = `${NOW}
return redis.call('ZREM', KEYS[1], ARGV[2])
`

/** -> slots taken now. */
const COUNT = `${NOW}
return redis.call('ZCARD', KEYS[1])
`

/** The slot scripts with their SHAs, shared by every store. */
export const SLOT_SCRIPTS = {
  acquire: script(ACQUIRE),
  renew: script(RENEW),
  release: script(RELEASE),
  count: script(COUNT),
}

type SlotScript = keyof typeof SLOT_SCRIPTS

export class RedisSlots implements SlotStore {
  private readonly loaded: Record<SlotScript, LoadedScript>

  constructor(
    private readonly client: ScriptClient,
    private readonly prefix: string,
    private readonly serverTime: boolean,
  ) {
    const loaded = {} as Record<SlotScript, LoadedScript>
    for (const [name, { lua, sha }] of Object.entries(SLOT_SCRIPTS)) {
      loaded[name as SlotScript] = { lua, sha, sent: false }
    }
    this.loaded = loaded
  }

  private run<T>(
    name: SlotScript,
    key: string,
    now: number,
    args: string[],
    answer: (reply: unknown) => T,
  ) {
    const script = this.loaded[name]
    const time = this.serverTime ? '' : String(now)
    const command = [script.sha, '1', keyStem(this.prefix, key) + 'c', time, ...args]
    return evaluate(this.client, script, command, answer)
  }

  acquire({ key, holder, limit, leaseMs, now }: SlotRequest): Promise<SlotReply> {
    return this.run('acquire', key, now, [holder, String(limit), String(leaseMs)], (reply) => {
      const [acquired, inFlight] = reply as [number, number]
      return { acquired: Number(acquired) === 1, inFlight: Number(inFlight) }
    })
  }

  renew({ key, holder, leaseMs, now }: SlotRequest): Promise<boolean> {
    return this.run('renew', key, now, [holder, String(leaseMs)], (reply) => Number(reply) === 1)
  }

  release({ key, holder, now }: SlotRequest): Promise<boolean> {
    return this.run('release', key, now, [holder], (reply) => Number(reply) === 1)
  }

  count(key: string, now: number): Promise<number> {
    return this.run('count', key, now, [], (reply) => Number(reply))
  }
}
