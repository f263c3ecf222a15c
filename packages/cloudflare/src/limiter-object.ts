/**
 * Owns the Durable Object that holds the state of the keys routed to it: each call read from
 * the object's storage, decided by core's transitions (transitions.ts), written back. An object
 * runs one event at a time, and its storage's input gate keeps other calls out while a read is
 * in flight, so read, decide, write is atomic without locks: decisions are exact. Writes are
 * to the object's storage before the answer leaves (its output gate), so an evicted or
 * restarted object loses nothing.
 */
import { decode, encode, type Answer, type Call } from './wire'
import { blockId, stateId, transition, type Stored } from './transitions'

/** The part of a Durable Object's storage the object uses (Cloudflare's DurableObjectStorage). */
export interface DurableObjectStorageLike {
  get<T = unknown>(keys: string[]): Promise<Map<string, T>>
  put(entries: Record<string, unknown>): Promise<void>
  delete(keys: string[]): Promise<number>
  list<T = unknown>(options?: { startAfter?: string; limit?: number }): Promise<Map<string, T>>
  getAlarm(): Promise<number | null>
  setAlarm(scheduledTime: number): Promise<void>
}

/** What a Durable Object's constructor is given first (Cloudflare's DurableObjectState). */
export interface DurableObjectStateLike {
  readonly storage: DurableObjectStorageLike
}

/** How long after a write expired states are swept from storage (ms). */
const SWEEP_AFTER_MS = 10 * 60_000
/** States swept per storage list call. */
const SWEEP_PAGE = 500
/** Storage keys are at most 2 KiB: a longer id is stored under its SHA-256. */
const MAX_ID_LENGTH = 1024

async function storageKey(id: string): Promise<string> {
  if (id.length <= MAX_ID_LENGTH) return id
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(id))
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')
  return `${id[0]}\u0000#${hex}`
}

/**
 * The Durable Object class to export from the Worker and bind in wrangler.toml
 * (`[[durable_objects.bindings]] name = "SLUICE_LIMITER", class_name = "SluiceLimiterObject"`,
 * with a migration creating it). DurableObjectStore sends it one POST per call.
 */
export class SluiceLimiterObject {
  private readonly storage: DurableObjectStorageLike
  private sweepArmed = false

  constructor(state: DurableObjectStateLike, _env?: unknown) {
    this.storage = state.storage
  }

  async fetch(request: Request): Promise<Response> {
    let answer: Answer
    let status = 200
    try {
      answer = await this.run(decode<Call>(await request.text()))
    } catch (error) {
      answer = { error: error instanceof Error ? error.message : String(error) }
      status = 500
    }
    return new Response(encode(answer), { status, headers: { 'content-type': 'application/json' } })
  }

  /** Removes states that are empty again (and ended blocks); re-arms while any are left. */
  async alarm(): Promise<void> {
    this.sweepArmed = false
    const before = Date.now() - SWEEP_AFTER_MS
    let after: string | undefined
    let kept = 0
    for (;;) {
      const page = await this.storage.list<Stored | number>({
        startAfter: after,
        limit: SWEEP_PAGE,
      })
      const expired: string[] = []
      for (const [id, value] of page) {
        const end = typeof value === 'number' ? value : value.e
        if (end < before) expired.push(id)
        else kept++
        after = id
      }
      if (expired.length > 0) await this.storage.delete(expired)
      if (page.size < SWEEP_PAGE) break
    }
    if (kept > 0) await this.armSweep()
  }

  private async run(call: Call): Promise<Answer> {
    // A refund on the object's clock (storeClock) lands where its charge did, not at arrival.
    const ownClock = call.objectTime && call.storeClock !== true
    const now = ownClock ? Date.now() : call.now
    const ids = await Promise.all(call.policies.map((p, i) => storageKey(stateId(call, i, p))))
    const block = await storageKey(blockId(call.key))
    const read =
      call.op === 'reset' || call.op === 'block'
        ? new Map<string, Stored | number>()
        : await this.storage.get<Stored | number>([...ids, block])
    const states = ids.map((id) => read.get(id) as Stored | undefined)
    const until = read.get(block) as number | undefined
    const result = transition(call, now, states, until)
    const keyOf = new Map<string, string>()
    call.policies.forEach((p, i) => keyOf.set(stateId(call, i, p), ids[i]))
    keyOf.set(blockId(call.key), block)
    if (result.put.size > 0) {
      const entries: Record<string, unknown> = {}
      for (const [id, value] of result.put) entries[keyOf.get(id) as string] = value
      // Not awaited: the output gate holds the answer until the write is durable.
      void this.storage.put(entries)
      if (!this.sweepArmed) void this.armSweep()
    }
    if (result.remove.length > 0)
      void this.storage.delete(result.remove.map((id) => keyOf.get(id) as string))
    // When the object's clock charged, so a late reply's refund can land exactly there.
    return call.op === 'consume' && ownClock
      ? { outcomes: result.outcomes, at: now }
      : { outcomes: result.outcomes }
  }

  private async armSweep(): Promise<void> {
    this.sweepArmed = true
    if ((await this.storage.getAlarm()) === null) {
      await this.storage.setAlarm(Date.now() + SWEEP_AFTER_MS)
    }
  }
}
