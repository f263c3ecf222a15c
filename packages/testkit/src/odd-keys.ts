/**
 * Owns the keys that a store writing UTF-8 would fold into one: lone halves of UTF-16 pairs,
 * U+FFFD itself, and a whole pair beside them. A limiter of limit 1 on any store must admit the
 * first request of each, as MemoryStore does.
 */
import type { Limiter } from '@sluice/core'

export const LONE_SURROGATE_KEYS: readonly string[] = [
  '\uD800',
  '\uDBFF',
  '\uDC00',
  '\uFFFD',
  'a\uD83D',
  'a\uFFFD',
  '\uD83D\uDE00',
]

/** Whether each key's first request (limit 1) was admitted: all true when none share a state. */
export async function firstOfEachAdmitted(limiter: Limiter): Promise<boolean[]> {
  const admitted: boolean[] = []
  for (const key of LONE_SURROGATE_KEYS) admitted.push((await limiter.consume(key)).allowed)
  return admitted
}
