/**
 * Owns row keys and the state a row holds: which row keeps a policy's state for a client key
 * (and the key's block), and a state vector as bytes.
 */
import type { Policy } from '@sluice/core'
import { boundKey } from '@sluice/core/adapter'

/**
 * The row (hex of its bytea key) of policy `policy` for client `key` and rule key `rule`:
 * `s<policy id>\0<length of key>\0<key>[\0<rule>]`, keys past 256 bytes hashed (core's
 * boundKey, as the HTTP adapters do). The length makes it unambiguous whatever the key holds
 * (quotes, NUL); bytes, not text, because Postgres text cannot hold NUL. A parameter, never SQL.
 */
export function stateRow(policy: Policy, key: string, rule: string | undefined): string {
  const bounded = boundKey(key)
  const tail = rule === undefined ? '' : `\u0000${boundKey(rule)}`
  return hex(`s${policy.id}\u0000${bounded.length}\u0000${bounded}${tail}`)
}

/** The row of the block on client `key`. */
export function blockRow(key: string): string {
  return hex(`b\u0000${boundKey(key)}`)
}

function hex(text: string): string {
  return Buffer.from(text, 'utf8').toString('hex')
}

/**
 * A state vector as the bytes of its float64s (little-endian): exact for every value. Trailing
 * zeros are left out (decodeState puts them back): sliding-log's ring is `limit` slots wide
 * but holds only the requests of its window.
 */
export function encodeState(state: readonly number[]): string {
  let length = state.length
  while (length > 0 && state[length - 1] === 0) length--
  const bytes = Buffer.allocUnsafe(length * 8)
  for (let i = 0; i < length; i++) bytes.writeDoubleLE(state[i], i * 8)
  return bytes.toString('hex')
}

/** The vector `slots` wide held in `bytes`; zeros past its end; undefined when not ours. */
export function decodeState(bytes: Uint8Array, slots: number): number[] | undefined {
  if (bytes.length % 8 !== 0) return undefined
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
  const state = new Array<number>(Math.max(slots, bytes.length / 8)).fill(0)
  for (let i = 0; i < bytes.length / 8; i++) state[i] = buffer.readDoubleLE(i * 8)
  return state
}
