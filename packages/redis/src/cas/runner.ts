/**
 * Owns the plans core decides in the store's process: wide plans (a policy with limit x window
 * past 2^50, core's isWide, such as 10^9 tokens a day, whose numbers pass 2^53 where Lua's
 * doubles cannot follow) and every plan of a packed store (RedisStoreOptions.packed). Core's
 * own transitions (algorithmOf) decide on state the scripts only move as text: one script
 * reads every state (and the block, and TIME), another writes back those that changed only if
 * none of them has changed since (compare-and-set), all in one step, so a decision stays
 * atomic and all-or-nothing across processes. Two round trips instead of one; a lost race is
 * decided again from a fresh read. Where the state lives: storage.ts.
 */
import type { Policy, PolicyOutcome, StoreRefund, StoreRequest, StoreResult } from '@sluice/core'
import { algorithmOf, SerialQueues } from '@sluice/core/web'
import { describeValue } from '../keys'
import { resultOf } from '../replies'
import { decidesAtOwnNow } from '../script-args'
import type { CasStorage, Change, Place } from './storage'

/** consume, peek, refund (with `at`) or reward (without), penalize. */
export type CasOp = 'c' | 'p' | 'r' | 'x'

/**
 * Reads and writes of one key that lose to another process this many times in a row fail the
 * call (the limiter's onStoreError decides then). The calls of one process are queued per key,
 * so the racers are processes; after a lost race a call waits a random 0 to `attempt` ms (at
 * most 10), so racers that collided spread out: with 4 processes on one hot key, 400 calls
 * at once all settle (packages/redis/test/packed.test.ts).
 */
const ATTEMPTS = 64

/** The wait after the n-th lost race in a row. */
function backoff(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(attempt, 10)))
}

/** One place of a decision: what the read saw, and the state vector it holds. */
interface Row {
  readonly place: Place
  readonly seen: string
  readonly exists: boolean
  /** The first policy kept here: policies that share a place share its id and slots. */
  readonly policy: Policy
  readonly state: number[]
  changed: boolean
}

const CONFLICT = Symbol('conflict')

function blank(): PolicyOutcome {
  return { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }
}

/** A state vector as stored: its numbers joined by commas (all integers). */
function decode(place: Place, value: string, slots: number): number[] {
  if (value === '') return new Array<number>(slots).fill(0)
  const state = value.split(',').map(Number)
  if (state.length !== slots || !state.every(Number.isSafeInteger)) {
    const where = place.field === '' ? place.key : `${place.key} field ${place.field}`
    throw new Error(`sluice: ${where} holds ${describeValue(value)}, not a state this store wrote`)
  }
  return state
}

const placeId = (place: Place): string => `${place.key}\u0000${place.field}`

export class CasRunner {
  /** Calls of one client key, one after another in this process (see SerialQueues). */
  private readonly queues = new SerialQueues()

  constructor(
    private readonly storage: CasStorage,
    private readonly serverTime: boolean,
    private readonly slackMs: number,
  ) {}

  /** `places[i]`: where policy i's state lives; `block`: the client key's block. */
  run(
    places: readonly Place[],
    block: Place,
    policies: readonly Policy[],
    request: StoreRequest,
    op: CasOp,
  ): Promise<StoreResult> {
    return this.queues.run(placeId(block), async () => {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const result = await this.once(places, block, policies, request, op)
        if (result !== CONFLICT) return result
        await backoff(attempt + 1)
      }
      throw new Error(
        `sluice: ${ATTEMPTS} compare-and-set writes in a row for ${block.field || block.key} lost to other writers`,
      )
    })
  }

  /**
   * Writes `value(now)` (its text and TTL; '' deletes) to every place, by compare-and-set on
   * what a read saw there: the block and reset of a packed store. `clientNow` undefined: now is
   * Redis TIME.
   */
  put(
    places: readonly Place[],
    clientNow: number | undefined,
    value: (now: number) => { value: string; ttlMs: number },
  ): Promise<void> {
    return this.queues.run(placeId(places[0]), async () => {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const read = await this.storage.read(places, undefined, clientNow)
        const next = value(read.now)
        const changes = places.map((place, i) => ({ place, seen: read.states[i].raw, ...next }))
        if (await this.storage.write(changes, undefined, read.now)) return
        await backoff(attempt + 1)
      }
      throw new Error(`sluice: ${ATTEMPTS} compare-and-set writes in a row lost to other writers`)
    })
  }

  private async once(
    places: readonly Place[],
    block: Place,
    policies: readonly Policy[],
    request: StoreRequest,
    op: CasOp,
  ): Promise<StoreResult | typeof CONFLICT> {
    const ids = places.map(placeId)
    const distinct = places.filter((place, i) => ids.indexOf(ids[i]) === i)
    const decides = op === 'c' || op === 'p'
    const read = await this.storage.read(
      distinct,
      decides ? block : undefined,
      decidesAtOwnNow(request, this.serverTime) ? undefined : request.now,
    )
    const now = read.now
    const rows = new Map<string, Row>()
    distinct.forEach((place, j) => {
      const { raw, value } = read.states[j]
      const policy = policies[ids.indexOf(placeId(place))]
      const state = decode(place, value, algorithmOf(policy).slots(policy))
      rows.set(placeId(place), {
        place,
        seen: raw,
        exists: value !== '',
        policy,
        state,
        changed: false,
      })
    })
    const rowOf = (i: number): Row => rows.get(ids[i]) as Row
    let outcomes: PolicyOutcome[] = []
    let at: number | undefined
    if (decides) {
      const wait = read.block.value === '' ? 0 : Number(read.block.value) - now
      if (wait > 0) {
        // The key is blocked (store.block): refused until the block ends, nothing counted.
        return { outcomes: policies.map(() => ({ ...blank(), resetMs: wait, retryAfterMs: wait })) }
      }
      outcomes = policies.map((policy, i) => {
        const out = blank()
        const { cost, maxDelayMs } = request
        algorithmOf(policy).decide(rowOf(i).state, 0, now, policy, cost, out, maxDelayMs)
        return out
      })
      if (op === 'p' || request.cost === 0 || outcomes.some((o) => !o.allowed)) return { outcomes }
      // Counted at Redis's `now`: a refund of this charge goes exactly there (StoreResult.at).
      if (this.serverTime) at = now
    }
    this.change(policies, rowOf, request, op, now)
    const check =
      op === 'c' ? { place: block, seen: read.block.raw, value: '', ttlMs: 0 } : undefined
    const written = await this.writeBack(rows, check, now)
    return written ? resultOf(outcomes, at) : CONFLICT
  }

  /** The transition of each policy: apply (consume), refund, penalize. */
  private change(
    policies: readonly Policy[],
    rowOf: (i: number) => Row,
    request: StoreRequest,
    op: CasOp,
    now: number,
  ): void {
    const { cost } = request
    const at = (request as StoreRefund).at
    // With server time `at` is moved onto Redis's clock, the same time before now.
    const atNow = at === undefined ? undefined : now - Math.max(0, request.now - at)
    policies.forEach((policy, i) => {
      const row = rowOf(i)
      const algorithm = algorithmOf(policy)
      if (op === 'c') algorithm.apply(row.state, 0, now, policy, cost)
      else if (op === 'x') algorithm.penalize(row.state, 0, now, policy, cost)
      // Nothing to give back to state that is gone (expired, reset): none is made.
      else if (row.exists) algorithm.refund(row.state, 0, now, policy, cost, atNow)
      else return
      row.changed = true
    })
  }

  /**
   * The changed rows, each as text living until it is empty (deleted once it is), by
   * compare-and-set over every place written and `check` (a consume's block).
   */
  private writeBack(
    rows: ReadonlyMap<string, Row>,
    check: Change | undefined,
    now: number,
  ): Promise<boolean> {
    const changes: Change[] = []
    for (const row of rows.values()) {
      if (!row.changed) continue
      const expiresAt = algorithmOf(row.policy).expiresAt(row.state, 0, row.policy)
      // Empty already and not stored: nothing to write (a refund into an expired window).
      if (expiresAt <= now && row.seen === '') continue
      const { place, seen } = row
      if (expiresAt <= now) changes.push({ place, seen, value: '', ttlMs: 0 })
      else {
        const ttlMs = expiresAt - now + this.slackMs
        changes.push({ place, seen, value: row.state.join(','), ttlMs })
      }
    }
    if (changes.length === 0) return Promise.resolve(true)
    return this.storage.write(changes, check, now)
  }
}
