/**
 * Owns deciding one call on the states it reads, with core's transitions (algorithmOf): the
 * object loads the states (storage.ts), this decides and says what to write. Pure: the same
 * states and call always give the same outcomes and writes.
 */
import { algorithmOf, type Policy, type PolicyOutcome } from '@sluice/core/web'
import type { Call } from './wire'

/** A state as stored: its slots, and when it is empty again (for the sweep). */
export interface Stored {
  readonly s: number[]
  readonly e: number
}

/** What a call leaves: outcomes, states to put (by id), ids to delete. */
export interface Result {
  readonly outcomes: PolicyOutcome[]
  readonly put: Map<string, Stored | number>
  readonly remove: string[]
}

/** The storage id of policy i's state: group key, rule key, policy id. */
export function stateId(call: Pick<Call, 'key' | 'keys'>, i: number, policy: Policy): string {
  return `s\u0000${call.key}\u0000${call.keys?.[i] ?? ''}\u0000${policy.id}`
}

/** The storage id of the key's block (its end time). */
export function blockId(key: string): string {
  return `b\u0000${key}`
}

function outcome(): PolicyOutcome {
  return { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }
}

/** Every policy refused until the block ends (Store.block). */
function blocked(policies: readonly Policy[], wait: number): PolicyOutcome[] {
  return policies.map(() => ({
    allowed: false,
    remaining: 0,
    resetMs: wait,
    retryAfterMs: wait,
    delayMs: 0,
  }))
}

/**
 * Decides `call` at `now` on the states read (`states[i]` policy i's, undefined when none;
 * `until` the key's block). Consume is all-or-nothing: every policy decides, and only when all
 * admit does each take the cost.
 */
export function transition(
  call: Call,
  now: number,
  states: readonly (Stored | undefined)[],
  until: number | undefined,
): Result {
  const result: Result = { outcomes: [], put: new Map(), remove: [] }
  const { op, policies, cost } = call
  if (op === 'reset') {
    policies.forEach((p, i) => result.remove.push(stateId(call, i, p)))
    result.remove.push(blockId(call.key))
    return result
  }
  if (op === 'block') {
    const end = call.until as number
    if (end > now) result.put.set(blockId(call.key), end)
    else result.remove.push(blockId(call.key))
    return result
  }
  const isBlocked = until !== undefined && until > now
  if ((op === 'consume' || op === 'peek') && isBlocked) {
    return { ...result, outcomes: blocked(policies, (until as number) - now) }
  }
  // Policies whose state ids repeat share one state, as on every store: each acts on it in turn.
  const ids = policies.map((p, i) => stateId(call, i, p))
  const shared = new Map<string, number[]>()
  const vectors = policies.map((p, i) => {
    let vector = shared.get(ids[i])
    if (vector === undefined) {
      vector = states[i]?.s.slice() ?? emptyState(p)
      shared.set(ids[i], vector)
    }
    return vector
  })
  // Each state once, after every policy has acted on it (a refund writes only states it read).
  const writeAll = (readOnly = false): void => {
    policies.forEach((policy, i) => {
      if (readOnly && states[i] === undefined) return
      if (result.put.has(ids[i]) || result.remove.includes(ids[i])) return
      const expires = algorithmOf(policy).expiresAt(vectors[i], 0, policy)
      if (expires > now) result.put.set(ids[i], { s: vectors[i], e: expires })
      else result.remove.push(ids[i])
    })
  }
  if (op === 'refund') {
    policies.forEach((p, i) => {
      if (states[i] !== undefined) algorithmOf(p).refund(vectors[i], 0, now, p, cost, call.at)
    })
    writeAll(true)
    return result
  }
  if (op === 'penalize') {
    policies.forEach((p, i) => algorithmOf(p).penalize(vectors[i], 0, now, p, cost))
    writeAll()
    return result
  }
  for (let i = 0; i < policies.length; i++) {
    const out = outcome()
    algorithmOf(policies[i]).decide(vectors[i], 0, now, policies[i], cost, out, call.maxDelayMs)
    result.outcomes.push(out)
  }
  if (op === 'peek' || cost === 0 || result.outcomes.some((o) => !o.allowed)) return result
  policies.forEach((p, i) => algorithmOf(p).apply(vectors[i], 0, now, p, cost))
  writeAll()
  return result
}

function emptyState(policy: Policy): number[] {
  return new Array<number>(algorithmOf(policy).slots(policy)).fill(0)
}
