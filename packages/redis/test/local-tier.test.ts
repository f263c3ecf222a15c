import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { createLimiter, type LimiterOptions } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { startRedis, type RedisServer } from '@sluice/testkit'
import { forkWorker, nextMessage, running, type Worker } from './workers'

/*
 * localTier across real processes on a real Redis: five Node processes (fixtures/tier-worker.js,
 * on the built dist: `npm run build -w packages/core -w packages/redis` first), each with its own
 * connection, RedisStore and tier. The test measures what docs/local-tier.md states and holds
 * the measurements to the stated bounds:
 * - shared-store commands per decision on a hot key under its limit (and on many cold keys),
 *   counted on the Redis server (INFO commandstats: the store sends only scripts), with the
 *   refunds of close() and one process SIGKILLed while it holds a lease;
 * - over-admission across N processes and under-admission, per algorithm, steady and bursty.
 */
const PROCESSES = 5

interface Message {
  ready?: boolean
  frozen?: boolean
  phase?: string
  made?: number
  admitted?: number
  stats?: {
    heldUnits: number
    storeConsumes: number
    storeRefunds: number
    leasedDecisions: number
  }
  events?: [number, number, number, number][][]
}

/** Commands the clients sent: RedisStore sends scripts only (commands run inside them not counted). */
async function scriptCommands(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats')
  let calls = 0
  for (const match of info.matchAll(
    /^cmdstat_(eval|evalsha|evalsha_ro|eval_ro|script\|load):calls=(\d+)/gm,
  ))
    calls += Number(match[2])
  return calls
}

/** Leases a process takes for D decisions of one key: 1, 2, 4, ... up to L, then L each. */
function leasesFor(decisions: number, maxLease: number): number {
  let leases = 0
  let size = 1
  for (let covered = 0; covered < decisions; leases++) {
    covered += size
    size = Math.min(maxLease, size * 2)
  }
  return leases
}

describe('localTier across processes on Redis', () => {
  let server: RedisServer
  let redis: Redis
  const workers: Worker<Message>[] = []
  const run = `lt:${Date.now()}`

  function start(worker: Worker<Message>, phase: string, args: unknown): void {
    worker.child.send({ phase, args })
  }

  beforeAll(async () => {
    server = await startRedis()
    redis = new Redis({ port: server.port, host: server.host, maxRetriesPerRequest: 1 })
    const script = join(__dirname, 'fixtures', 'tier-worker.js')
    for (let i = 0; i < PROCESSES; i++) workers.push(forkWorker(script, [String(server.port)]))
    for (const worker of workers) expect(await nextMessage(worker)).toEqual({ ready: true })
  }, 30_000)

  afterAll(async () => {
    for (const worker of workers) if (running(worker)) worker.child.kill('SIGKILL')
    redis?.disconnect()
    await server?.stop()
  })

  test('a hot key under its limit: ≤ 0.05 commands per decision, close() and a killed process included', async () => {
    // Defaults (maxShare 0.02): L = 200 of 10 000. sliding-log over an hour: nothing leaves the
    // window during the test, so the store's count is exactly what was charged.
    const limiter: LimiterOptions = { algorithm: 'sliding-log', limit: 10_000, window: '1h' }
    const key = `${run}:hot`
    const decisions = 1600
    const before = await scriptCommands(redis)
    const [victim, ...rest] = workers
    start(victim, 'hot', { key, limiter, decisions, perTick: 4, freezeAt: 800 })
    for (const worker of rest) start(worker, 'hot', { key, limiter, decisions, perTick: 4 })
    const frozen = await nextMessage(victim)
    expect(frozen.frozen).toBe(true)
    victim.child.kill('SIGKILL')
    const killedAt = Date.now()
    const results = await Promise.all(rest.map((w) => nextMessage(w)))
    const after = await scriptCommands(redis)

    const reports = [frozen, ...results]
    const made = reports.reduce((sum, r) => sum + (r.made as number), 0)
    const admitted = reports.reduce((sum, r) => sum + (r.admitted as number), 0)
    expect(admitted).toBe(made) // under its limit: everything passes
    const commands = after - before
    const perDecision = commands / made
    // Stated: per process and key, leasesFor(D, L) consumes and one refund at close.
    const stated = reports.reduce((sum, r) => sum + leasesFor(r.made as number, 200) + 1, 0)
    expect(commands).toBeLessThanOrEqual(stated)
    expect(perDecision).toBeLessThanOrEqual(0.05)
    // What each process says it sent is what Redis counted.
    const sent = reports.reduce((s, r) => s + r.stats!.storeConsumes + r.stats!.storeRefunds, 0)
    expect(sent).toBe(commands)

    // The killed process held a lease; once it has expired (leaseMs: 1000 by default) its units
    // are still charged (at most L, as documented), and nothing else is.
    await delay(Math.max(0, killedAt + 1000 - Date.now()))
    const held = frozen.stats!.heldUnits
    expect(held).toBeGreaterThan(0)
    expect(held).toBeLessThanOrEqual(200)
    const checker = createLimiter({
      ...limiter,
      store: new RedisStore({ client: redis, time: 'client' }),
    })
    expect((await checker.peek(key)).remaining).toBe(10_000 - admitted - held)
    console.log(
      `local tier, hot key: ${made} decisions, ${commands} Redis commands (${perDecision.toFixed(4)} per decision); the killed process held ${held}`,
    )
  }, 20_000)

  test("a hot key on Redis's own clock (RedisStore's default): the same calls, and every count exact", async () => {
    const alive = workers.filter(running)
    // fixed-window from the key's first request: no window ends during the test.
    const limiter: LimiterOptions = {
      algorithm: 'fixed-window',
      anchor: 'first-request',
      limit: 10_000,
      window: '1h',
    }
    const key = `${run}:hot-server-time`
    const before = await scriptCommands(redis)
    for (const worker of alive) {
      start(worker, 'hot', { key, limiter, decisions: 1600, perTick: 4, serverTime: true })
    }
    const results = await Promise.all(alive.map((w) => nextMessage(w)))
    const commands = (await scriptCommands(redis)) - before
    const made = alive.length * 1600
    expect(results.reduce((sum, r) => sum + (r.admitted as number), 0)).toBe(made)
    expect(commands).toBeLessThanOrEqual(alive.length * (leasesFor(1600, 200) + 1))
    expect(commands / made).toBeLessThanOrEqual(0.05)
    // Every unspent unit was refunded into the window it was counted in.
    const checker = createLimiter({ ...limiter, store: new RedisStore({ client: redis }) })
    expect((await checker.peek(key)).remaining).toBe(10_000 - made)
  }, 20_000)

  test('many keys under their limit: commands as stated for keys a process sees a few times', async () => {
    const alive = workers.filter(running)
    expect(alive).toHaveLength(PROCESSES - 1)
    // L = 20 of 1000; 150 keys decided 20 times by each process.
    const limiter: LimiterOptions = { algorithm: 'fixed-window', limit: 1000, window: '1h' }
    const keys = 150
    const rounds = 20
    const before = await scriptCommands(redis)
    for (const worker of alive)
      start(worker, 'many', { prefix: `${run}:many`, keys, rounds, limiter })
    const results = await Promise.all(alive.map((w) => nextMessage(w)))
    const commands = (await scriptCommands(redis)) - before
    const made = alive.length * keys * rounds
    expect(results.reduce((sum, r) => sum + (r.admitted as number), 0)).toBe(made)
    // Stated: leasesFor(20, 20) = 5 consumes (1, 2, 4, 8, 16) and one refund at close, per key and process.
    const stated = alive.length * keys * (leasesFor(rounds, 20) + 1)
    const sent = results.reduce((s, r) => s + r.stats!.storeConsumes + r.stats!.storeRefunds, 0)
    expect(sent).toBe(stated) // store calls, exactly as stated
    expect(commands).toBeLessThanOrEqual(sent) // RedisStore sends the keys of one turn together
    console.log(
      `local tier, ${keys} keys x ${rounds} decisions per process: ${(commands / made).toFixed(3)} Redis commands per decision (stated at most ${(stated / made).toFixed(3)})`,
    )
  }, 20_000)

  /*
   * Keys at their limit, one per algorithm, hammered by the four live processes, steady then
   * bursty. Every decision comes back as [at, allowed], `at` being the clock Redis decided on.
   * Stated, with N processes and L = max(1, floor(maxShare x capacity)) (docs/local-tier.md):
   * fixed-window and sliding-window never admit more than the limit; sliding-log at most N x L
   * more in any window; token-bucket and gcra at most N x L more in any interval than burst +
   * rate x its length; none refuses while more than N x L short of the limit.
   */
  const LIMIT = 400
  const WINDOW = 1000
  const SHARE = 0.05 // L = 20
  const ALGORITHMS = [
    'fixed-window',
    'sliding-window',
    'sliding-log',
    'token-bucket',
    'gcra',
  ] as const

  test.each(['steady', 'bursty'])(
    '%s load at the limit: admitted within the stated bounds',
    async (pattern) => {
      const alive = workers.filter(running)
      const n = alive.length
      const nl = n * LIMIT * SHARE
      const keys = ALGORITHMS.map((algorithm) => ({
        key: `${run}:${pattern}:${algorithm}`,
        limiter: { algorithm, limit: LIMIT, window: WINDOW },
      }))
      for (const worker of alive) {
        start(worker, 'load', {
          pattern,
          durationMs: 1500,
          burst: 50,
          keys,
          tier: { maxShare: SHARE },
        })
      }
      const results = await Promise.all(alive.map((w) => nextMessage(w)))
      const measured = ALGORITHMS.map((algorithm, i) => {
        const events = results.flatMap((r) => r.events![i]).sort((a, b) => a[0] - b[0])
        const refused = events.filter(([, allowed]) => allowed === 0).length
        return { algorithm, decisions: events.length, refused, ...MEASURE[algorithm](events) }
      })
      const lines = measured.map(
        (m) =>
          `${m.algorithm}: ${m.decisions} decisions, ${m.refused} refused, over-admission ${m.over}, under-admission ${m.under} (bound ${nl})`,
      )
      console.log(
        `local tier, ${pattern} load, ${n} processes, L = ${LIMIT * SHARE}:\n${lines.join('\n')}`,
      )
      for (const { algorithm, refused, over, under } of measured) {
        expect(refused).toBeGreaterThan(0) // the load did reach the limit
        const stated = algorithm === 'fixed-window' || algorithm === 'sliding-window' ? 0 : nl
        expect({ algorithm, over: Math.min(over, stated) }).toEqual({ algorithm, over })
        expect({ algorithm, under: Math.min(under, nl) }).toEqual({ algorithm, under })
      }
    },
    20_000,
  )

  /**
   * [at: the clock the store decided on, allowed 1 | 0, answeredAt: when the answer came back,
   * resetMs: the decision's].
   */
  type Events = [number, number, number, number][]

  /*
   * Over-admission is measured on `at`, the time each request counted at. Under-admission at a
   * refusal: under load a request's `at` is older than the moment the store decided (its
   * command waited), and the store then also held what was counted at later times; so a
   * refusal is compared with the admitted requests the store could have seen by then (counted
   * in the same window, or answered before the refusal was).
   */
  const MEASURE: Record<
    (typeof ALGORITHMS)[number],
    (events: Events) => { over: number; under: number }
  > = {
    'fixed-window': (events) => {
      // The window a decision counted in ends at + resetMs: a request whose `at` is behind a
      // window another process already opened counts in that newer one (fixed-window.ts holds
      // a clock behind the counted window there), not in the window of its `at`.
      const windowOf = (at: number, resetMs: number): number =>
        Math.floor((at + resetMs - 1) / WINDOW)
      const admitted = new Map<number, number>()
      for (const [at, allowed, , resetMs] of events) {
        const window = windowOf(at, resetMs)
        admitted.set(window, (admitted.get(window) ?? 0) + allowed)
      }
      let under = -Infinity
      for (const [at, allowed, , resetMs] of events) {
        if (!allowed) under = Math.max(under, LIMIT - (admitted.get(windowOf(at, resetMs)) ?? 0))
      }
      return { over: Math.max(...admitted.values()) - LIMIT, under }
    },
    'sliding-window': (events) => {
      const inBucket = new Map<number, number>()
      for (const [at, allowed] of events) {
        const bucket = Math.floor(at / WINDOW)
        inBucket.set(bucket, (inBucket.get(bucket) ?? 0) + allowed)
      }
      /** The estimate at `at` over the given counts of the bucket and the one before. */
      const estimate = (at: number, current: number, previous: number): number =>
        current +
        Math.floor((previous * (WINDOW - (at - Math.floor(at / WINDOW) * WINDOW))) / WINDOW)
      let over = -Infinity
      let under = -Infinity
      for (const [at, allowed] of events) {
        const bucket = Math.floor(at / WINDOW)
        if (allowed) {
          // After every request of that ms: the requests counted up to then.
          const current = countUpTo(events, at, (t) => Math.floor(t / WINDOW) === bucket)
          const previous = countUpTo(events, at, (t) => Math.floor(t / WINDOW) === bucket - 1)
          over = Math.max(over, estimate(at, current, previous) - LIMIT)
        } else {
          const seen = estimate(at, inBucket.get(bucket) ?? 0, inBucket.get(bucket - 1) ?? 0)
          under = Math.max(under, LIMIT - seen)
        }
      }
      return { over, under }
    },
    'sliding-log': (events) => {
      let over = -Infinity
      let under = -Infinity
      for (const [at, allowed, answeredAt] of events) {
        if (allowed) over = Math.max(over, countUpTo(events, at, (t) => t > at - WINDOW) - LIMIT)
        else under = Math.max(under, LIMIT - answeredBy(events, answeredAt, (t) => t > at - WINDOW))
      }
      return { over, under }
    },
    'token-bucket': meter,
    gcra: meter,
  }

  /**
   * Meters (burst = limit, rate = limit / window). Over: the most any interval [x, y] admitted
   * beyond burst + rate x (y - x). Under: at a refusal at z, how far the admitted requests the
   * store had seen fall short of burst + rate x (z - first), less the one token a refusal may
   * leave unused (the load never lets the bucket fill up again, so no refill is lost).
   */
  function meter(events: Events): { over: number; under: number } {
    const rate = LIMIT / WINDOW
    const times = events.filter(([, allowed]) => allowed === 1).map(([at]) => at)
    let over = -Infinity
    let lowest = Infinity // min over i of (i - rate x t_i): the best start of an interval ending at j
    for (let j = 0; j < times.length; j++) {
      lowest = Math.min(lowest, j - rate * times[j])
      // Every request of the same ms as j counts in the interval ending at j.
      if (j + 1 < times.length && times[j + 1] === times[j]) continue
      over = Math.max(over, Math.floor(j + 1 - rate * times[j] - lowest - LIMIT))
    }
    const first = events[0][0]
    let under = -Infinity
    for (const [at, allowed, answeredAt] of events) {
      if (allowed) continue
      const owed = Math.floor(LIMIT + rate * (at - first)) - 1
      under = Math.max(under, owed - answeredBy(events, answeredAt, () => true))
    }
    return { over, under }
  }

  /** Admitted requests answered by `answeredAt` whose `at` passes `inRange`. */
  function answeredBy(events: Events, answeredAt: number, inRange: (t: number) => boolean): number {
    let count = 0
    for (const [t, allowed, answered] of events)
      if (allowed && answered <= answeredAt && inRange(t)) count++
    return count
  }

  /** Admitted at or before `at` (every request of that ms) whose time passes `inRange`. */
  function countUpTo(events: Events, at: number, inRange: (t: number) => boolean): number {
    let count = 0
    for (const [t, allowed] of events) {
      if (t > at) break
      if (allowed && inRange(t)) count++
    }
    return count
  }
})
