/**
 * Owns the serialized bodies adapters answer rejections with: one JSON string per distinct
 * body, reused, since under a flood the bodies repeat. With `message` not a function, a body
 * depends only on the status, the reason and the whole seconds to wait.
 */
import type { RejectVerdict } from './types'

/** Distinct bodies kept; more (a limiter whose waits span hours) start the cache afresh. */
const MAX_BODIES = 256

/**
 * `serialize(verdict)` cached per status, reason and wait; undefined where the body varies per
 * request: a `message` function, a request that can never pass (its message names its policy's
 * capacity), a deny or an abort.
 */
export function createRefusalJson(
  message: unknown,
  serialize: (verdict: RejectVerdict) => string,
): (verdict: RejectVerdict) => string | undefined {
  if (message !== undefined && typeof message !== 'string') return () => undefined
  // Keyed by a number (wait x 1000 + status), one map per reason: no string built per 429.
  const limited = new Map<number, string>()
  const banned = new Map<number, string>()
  return (verdict) => {
    if (verdict.retryAfterSeconds <= 0) return undefined
    const bodies =
      verdict.reason === 'limited' ? limited : verdict.reason === 'banned' ? banned : undefined
    if (bodies === undefined) return undefined
    const id = verdict.retryAfterSeconds * 1000 + verdict.status
    let json = bodies.get(id)
    if (json === undefined) {
      if (bodies.size >= MAX_BODIES) bodies.clear()
      json = serialize(verdict)
      bodies.set(id, json)
    }
    return json
  }
}

/** The Content-Type a serialized rejection is sent with. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'
