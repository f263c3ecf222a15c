/**
 * Owns where the plans core decides in the store's process (runner.ts) keep their state: keys
 * of their own (wide plans) or fields of packed hashes (RedisStoreOptions.packed), each read by
 * one script and written by one compare-and-set script (lua/cas.ts).
 */
import type { ScriptClient } from '../client/types'
import { evaluate } from '../evaluate'
import { describeValue } from '../keys'
import { SCRIPTS, type LuaScript } from '../lua'
import type { LoadedScript } from '../plan'

/** Where one state (or a block) lives: a key, and in a packed hash its field ('' otherwise). */
export interface Place {
  readonly key: string
  readonly field: string
}

/** What a read saw of one place: as stored (compared on write), and the state or block in it. */
export interface Seen {
  readonly raw: string
  /** The state vector's text, or the block's end; '' when missing or expired. */
  readonly value: string
}

export interface StorageRead {
  /** The request's time, or Redis TIME. */
  readonly now: number
  readonly block: Seen
  readonly states: readonly Seen[]
}

/** One place written: what the read saw there, and what it holds now ('' deletes it). */
export interface Change {
  readonly place: Place
  readonly seen: string
  readonly value: string
  /** ms from now until the state is empty again. */
  readonly ttlMs: number
}

export interface CasStorage {
  /** `now`: the request's time; undefined to read Redis TIME (time: 'server'). */
  read(
    states: readonly Place[],
    block: Place | undefined,
    now: number | undefined,
  ): Promise<StorageRead>
  /** The changes, when no place written (nor `check`) changed since the read: else false. */
  write(changes: readonly Change[], check: Change | undefined, now: number): Promise<boolean>
}

const MISSING: Seen = { raw: '', value: '' }

function loaded(script: LuaScript): LoadedScript {
  return { lua: script.lua, sha: script.sha, sent: false }
}

function unexpected(reply: unknown): Error {
  return new Error(`unexpected reply from the sluice script: ${describeValue(reply)}`)
}

/** Keys of their own: the value is the state's text, with the state's TTL. */
export class KeyStorage implements CasStorage {
  private readonly readScript = loaded(SCRIPTS['wide-read'])
  private readonly writeScript = loaded(SCRIPTS['wide-write'])

  constructor(private readonly client: ScriptClient) {}

  async read(
    states: readonly Place[],
    block: Place | undefined,
    now: number | undefined,
  ): Promise<StorageRead> {
    const keys = states.map((p) => p.key)
    if (block !== undefined) keys.push(block.key)
    const command = [this.readScript.sha, String(keys.length), ...keys, String(states.length)]
    command.push(now === undefined ? '1' : '')
    const reply = await evaluate(this.client, this.readScript, command, (r) => r)
    if (!Array.isArray(reply) || reply.length !== states.length + 2) throw unexpected(reply)
    const seen = (raw: unknown): Seen => ({ raw: String(raw), value: String(raw) })
    return {
      now: now ?? Number(reply[0]),
      block: seen(reply[1]),
      states: reply.slice(2).map(seen),
    }
  }

  write(changes: readonly Change[], check: Change | undefined, _now: number): Promise<boolean> {
    const checked = check === undefined ? changes : [...changes, check]
    const command = [this.writeScript.sha, String(checked.length)]
    for (const c of checked) command.push(c.place.key)
    command.push(String(checked.length))
    for (const c of checked) command.push(c.seen)
    for (const c of changes) command.push(c.value, String(c.ttlMs))
    return evaluate(this.client, this.writeScript, command, (reply) => reply === 1)
  }
}

/**
 * Fields of packed hashes: the value is `<expires at>;<state>` (a field has no TTL), read as
 * missing once it has expired; the write script sweeps expired fields (lua/cas.ts).
 */
export class PackedStorage implements CasStorage {
  private readonly readScript = loaded(SCRIPTS['packed-read'])
  private readonly writeScript = loaded(SCRIPTS['packed-write'])

  constructor(private readonly client: ScriptClient) {}

  async read(
    states: readonly Place[],
    block: Place | undefined,
    clientNow: number | undefined,
  ): Promise<StorageRead> {
    const places = block === undefined ? states : [...states, block]
    const keys: string[] = []
    const args: string[] = [clientNow === undefined ? '1' : '']
    for (const place of places) args.push(String(indexIn(keys, place.key)), place.field)
    const command = [this.readScript.sha, String(keys.length), ...keys, ...args]
    const reply = await evaluate(this.client, this.readScript, command, (r) => r)
    if (!Array.isArray(reply) || reply.length !== places.length + 1) throw unexpected(reply)
    const now = clientNow ?? Number(reply[0])
    const seen = (raw: unknown): Seen => unpackValue(raw, now)
    return {
      now,
      block: block === undefined ? MISSING : seen(reply[places.length]),
      states: reply.slice(1, states.length + 1).map(seen),
    }
  }

  write(changes: readonly Change[], check: Change | undefined, now: number): Promise<boolean> {
    const keys: string[] = []
    const checked = check === undefined ? changes : [...changes, check]
    const args: string[] = [String(now), String(checked.length)]
    for (const c of checked) args.push(String(indexIn(keys, c.place.key)), c.place.field, c.seen)
    for (const c of changes) {
      args.push(String(indexIn(keys, c.place.key)), c.place.field)
      args.push(c.value === '' ? '' : `${now + c.ttlMs};${c.value}`, String(c.ttlMs))
    }
    const command = [this.writeScript.sha, String(keys.length), ...keys, ...args]
    return evaluate(this.client, this.writeScript, command, (reply) => reply === 1)
  }
}

/** The 1-based index of `key` in `keys`, added when new. */
function indexIn(keys: string[], key: string): number {
  const at = keys.indexOf(key)
  if (at >= 0) return at + 1
  keys.push(key)
  return keys.length
}

/**
 * A packed field as stored, and what it holds: nothing once the time before its `;` has come,
 * as a key of its own would be gone at its TTL.
 */
function unpackValue(raw: unknown, now: number): Seen {
  const text = String(raw)
  const cut = text.indexOf(';')
  const live = cut > 0 && Number(text.slice(0, cut)) > now
  return { raw: text, value: live ? text.slice(cut + 1) : '' }
}
