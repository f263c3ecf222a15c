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
 * A state vector as bytes, exact for every value and small for the usual ones: a whole number
 * n >= 0 (counts, window numbers, ms timestamps) is the varint of 2n (1-7 bytes), any other
 * number the varint 1 then its float64 (little-endian). Trailing zeros are left out (decodeState
 * puts them back): sliding-log's ring is `limit` slots wide but holds only its window's requests.
 */
export function encodeState(state: readonly number[]): string {
  let length = state.length
  while (length > 0 && state[length - 1] === 0) length--
  const bytes: number[] = []
  const float = Buffer.allocUnsafe(8)
  for (let i = 0; i < length; i++) {
    const value = state[i]
    if (Number.isSafeInteger(value) && value >= 0 && value <= MAX_WHOLE) {
      pushVarint(bytes, value * 2)
    } else {
      bytes.push(1)
      float.writeDoubleLE(value, 0)
      for (const byte of float) bytes.push(byte)
    }
  }
  return Buffer.from(bytes).toString('hex')
}

/** The largest whole number written as a varint (2n stays exact below 2^53). */
const MAX_WHOLE = 2 ** 52 - 1

function pushVarint(bytes: number[], value: number): void {
  while (value >= 128) {
    bytes.push((value % 128) + 128)
    value = Math.floor(value / 128)
  }
  bytes.push(value)
}

/** The vector `slots` wide held in `bytes`; zeros past its end; undefined when not ours. */
export function decodeState(bytes: Uint8Array, slots: number): number[] | undefined {
  const state: number[] = []
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
  let at = 0
  while (at < bytes.length) {
    let value = 0
    let scale = 1
    for (;;) {
      if (at >= bytes.length || scale > 2 ** 56) return undefined
      const byte = bytes[at++]
      value += (byte % 128) * scale
      scale *= 128
      if (byte < 128) break
    }
    if (value === 1) {
      if (at + 8 > bytes.length) return undefined
      state.push(view.readDoubleLE(at))
      at += 8
    } else if (value % 2 === 0) state.push(value / 2)
    else return undefined
  }
  while (state.length < slots) state.push(0)
  return state
}
