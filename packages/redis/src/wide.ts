/**
 * Owns wide plans: the policies of a key when one of them is wide (limit x window past 2^50,
 * core's isWide), such as 10^9 tokens a day. Their arithmetic passes 2^53, which Lua's doubles
 * cannot hold, so core decides them here, with its own transitions (algorithmOf), on state
 * the scripts only move as text: one script reads every state key (and the block, and TIME),
 * another writes back the keys that changed only if no key it read has changed since
 * (compare-and-set), all in one step, so a decision stays atomic and all-or-nothing across
 * processes. Two round trips instead of one; a lost race is decided again from a fresh read.
 */
import type { Policy, PolicyOutcome, StoreRefund, StoreRequest } from '@sluice/core'
import { algorithmOf, SerialQueues } from '@sluice/core/adapter'
import type { ScriptClient } from './client/types'
import { evaluate } from './evaluate'
import { describeValue } from './keys'
import { SCRIPTS } from './lua'
import type { LoadedScript } from './plan'

/** consume, peek, refund (with `at`) or reward (without), penalize. */
export type WideOp = 'c' | 'p' | 'r' | 'x'

/**
 * Reads and writes of one key that lose to another process this many times in a row fail the
 * call (the limiter's onStoreError decides then): far more than a key sees while the calls of
 * this process are queued per key.
 */
const ATTEMPTS = 16

/** Suffix of a wide plan's state keys: their text state never meets a script's own format. */
export const WIDE_SUFFIX = ':v'

/** One state key of a decision: what the read saw, and the state vector it holds. */
interface Row {
  readonly seen: string
  /** The first policy kept here: policies that share a state key share its id and slots. */
  readonly policy: Policy
  readonly state: number[]
  changed: boolean
}

const CONFLICT = Symbol('conflict')

function blank(): PolicyOutcome {
  return { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }
}

/** A state vector as stored: its numbers joined by commas (all integers). */
function decode(key: string, value: string, slots: number): number[] {
  if (value === '') return new Array<number>(slots).fill(0)
  const state = value.split(',').map(Number)
  if (state.length !== slots || !state.every(Number.isSafeInteger)) {
    throw new Error(`sluice: ${key} holds ${describeValue(value)}, not a state this store wrote`)
  }
  return state
}

export class WideRunner {
  private readonly read: LoadedScript
  private readonly write: LoadedScript
  /** Calls of one client key, one after another in this process (see SerialQueues). */
  private readonly queues = new SerialQueues()

  constructor(
    private readonly client: ScriptClient,
    private readonly serverTime: boolean,
    private readonly slackMs: number,
  ) {
    const { 'wide-read': read, 'wide-write': write } = SCRIPTS
    this.read = { lua: read.lua, sha: read.sha, sent: false }
    this.write = { lua: write.lua, sha: write.sha, sent: false }
  }

  /** `keys[i]`: policy i's state key; `block`: the client key's block. */
  run(
    keys: readonly string[],
    block: string,
    policies: readonly Policy[],
    request: StoreRequest,
    op: WideOp,
  ): Promise<PolicyOutcome[]> {
    return this.queues.run(block, async () => {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const outcomes = await this.once(keys, block, policies, request, op)
        if (outcomes !== CONFLICT) return outcomes
      }
      throw new Error(
        `sluice: ${ATTEMPTS} compare-and-set writes in a row on ${block.slice(0, -1)}* lost to other writers`,
      )
    })
  }

  private async once(
    keys: readonly string[],
    block: string,
    policies: readonly Policy[],
    request: StoreRequest,
    op: WideOp,
  ): Promise<PolicyOutcome[] | typeof CONFLICT> {
    const distinct = [...new Set(keys)]
    const decides = op === 'c' || op === 'p'
    const reply = await evaluate(
      this.client,
      this.read,
      [
        this.read.sha,
        String(distinct.length + (decides ? 1 : 0)),
        ...distinct,
        ...(decides ? [block] : []),
        String(distinct.length),
        this.serverTime ? '1' : '',
      ],
      (r) => r,
    )
    if (!Array.isArray(reply) || reply.length !== distinct.length + 2) {
      throw new Error(`unexpected reply from the sluice script: ${describeValue(reply)}`)
    }
    const now = this.serverTime ? Number(reply[0]) : request.now
    const rows = new Map<string, Row>()
    distinct.forEach((key, j) => {
      const seen = String(reply[j + 2])
      const policy = policies[keys.indexOf(key)]
      const state = decode(key, seen, algorithmOf(policy).slots(policy))
      rows.set(key, { seen, policy, state, changed: false })
    })
    const rowOf = (i: number): Row => rows.get(keys[i]) as Row
    const blockSeen = String(reply[1])
    let outcomes: PolicyOutcome[] = []
    if (decides) {
      const wait = blockSeen === '' ? 0 : Number(blockSeen) - now
      if (wait > 0) {
        // The key is blocked (store.block): refused until the block ends, nothing counted.
        return policies.map(() => ({ ...blank(), resetMs: wait, retryAfterMs: wait }))
      }
      outcomes = policies.map((policy, i) => {
        const out = blank()
        algorithmOf(policy).decide(
          rowOf(i).state,
          0,
          now,
          policy,
          request.cost,
          out,
          request.maxDelayMs,
        )
        return out
      })
      if (op === 'p' || request.cost === 0 || outcomes.some((o) => !o.allowed)) return outcomes
    }
    this.change(policies, rowOf, request, op, now)
    const written = await this.writeBack(rows, op === 'c' ? [block, blockSeen] : undefined, now)
    return written ? outcomes : CONFLICT
  }

  /** The transition of each policy: apply (consume), refund, penalize. */
  private change(
    policies: readonly Policy[],
    rowOf: (i: number) => Row,
    request: StoreRequest,
    op: WideOp,
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
      // Nothing to give back to state that is gone (expired, reset): no key is made.
      else if (row.seen !== '') algorithm.refund(row.state, 0, now, policy, cost, atNow)
      else return
      row.changed = true
    })
  }

  /**
   * The changed rows, each as text with a TTL until it is empty (deleted once it is), by
   * compare-and-set over every key written and, for a consume, the block: false when one
   * changed since the read.
   */
  private async writeBack(
    rows: ReadonlyMap<string, Row>,
    block: readonly [string, string] | undefined,
    now: number,
  ): Promise<boolean> {
    const keys: string[] = []
    const seen: string[] = []
    const values: string[] = []
    for (const [key, row] of rows) {
      if (!row.changed) continue
      const expiresAt = algorithmOf(row.policy).expiresAt(row.state, 0, row.policy)
      // Empty already and not stored: nothing to write (a refund into an expired window).
      if (expiresAt <= now && row.seen === '') continue
      keys.push(key)
      seen.push(row.seen)
      if (expiresAt <= now) values.push('', '0')
      else values.push(row.state.join(','), String(expiresAt - now + this.slackMs))
    }
    if (keys.length === 0) return true
    if (block !== undefined) {
      keys.push(block[0])
      seen.push(block[1])
    }
    const command = [this.write.sha, String(keys.length), ...keys, String(keys.length), ...seen]
    for (const value of values) command.push(value)
    return evaluate(this.client, this.write, command, (reply) => reply === 1)
  }
}
