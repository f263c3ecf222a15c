import {
  concurrencySlotKey,
  createLimiter,
  localTier,
  MemoryStore,
  prometheusMetrics,
  type Decision,
  type Store,
  type StoreRequest,
} from '@sluice/core'
import { Registry } from 'prom-client'
import { createHttpLimiter } from '@sluice/http'
import { createHeaderWriter, responseTimes } from '../../http/src/headers'
import type { SlotReply, SlotRequest } from '../src/concurrency/slots'
import { gateOf } from '../src/concurrency/limiter'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A real MemoryStore seen as a shared store (not in-process), with the slots given. */
function sharedOver(inner: MemoryStore, slots: Store['slots']): Store {
  return {
    consume: (r: StoreRequest) => inner.consume(r),
    peek: (r: StoreRequest) => inner.peek(r),
    refund: (r) => inner.refund(r),
    penalize: (r) => inner.penalize(r),
    block: (r) => inner.block(r),
    reset: (k, p) => inner.reset(k, p),
    slots,
  }
}

/** Slots taken of `key` under a concurrency limit of `limit` (no prefix). */
function slotsOf(store: MemoryStore, key: string, limit: number, now = 0) {
  return store.slots.count(concurrencySlotKey(key, limit), now)
}

describe('concurrency limits (memory store)', () => {
  test('admits while fewer than N are in flight; remaining is the free slots', async () => {
    const store = new MemoryStore()
    const limiter = createLimiter({ concurrency: 3, store, clock: () => 0 })
    const held: Decision[] = []
    for (let i = 0; i < 3; i++) held.push(await limiter.consume('k'))
    expect(held.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
    ])
    const refused = await limiter.consume('k')
    expect([refused.allowed, refused.remaining, refused.slot]).toEqual([false, 0, undefined])
    expect(await slotsOf(store, 'k', 3)).toBe(3)
    await held[0].slot!.release()
    expect(await slotsOf(store, 'k', 3)).toBe(2)
    expect((await limiter.consume('k')).allowed).toBe(true)
    expect((await limiter.consume('other')).allowed).toBe(true) // per key
  })

  test('limits of one store and key: apart per limit, shared by equal ones', async () => {
    const store = new MemoryStore()
    const upload = createLimiter({ concurrency: 5, store, clock: () => 0 })
    const report = createLimiter({ concurrency: 1, store, clock: () => 0 })
    const sameAsReport = createLimiter({ concurrency: 1, store, clock: () => 0 })
    const uploading = await upload.consume('user:1')
    expect(uploading.allowed).toBe(true)
    // One upload in flight takes none of the report's one slot.
    const reporting = await report.consume('user:1')
    expect(reporting.allowed).toBe(true)
    expect(await slotsOf(store, 'user:1', 5)).toBe(1)
    expect(await slotsOf(store, 'user:1', 1)).toBe(1)
    // A limiter of the same limit on the same store counts the same slots (as a rate limit's state).
    expect((await sameAsReport.consume('user:1')).allowed).toBe(false)
    await reporting.slot!.release()
    expect((await sameAsReport.consume('user:1')).allowed).toBe(true)
    await uploading.slot!.release()
  })

  test('a release twice or of a lapsed slot does nothing, is counted, never goes negative', async () => {
    const store = new MemoryStore()
    const clock = { now: 0 }
    const limiter = createLimiter({
      concurrency: { concurrency: 2, leaseMs: 1000 },
      store,
      clock: () => clock.now,
    })
    const gate = gateOf(limiter)!
    const a = await limiter.consume('k')
    const b = await limiter.consume('k')
    await a.slot!.release()
    await a.slot!.release()
    expect(a.slot!.released).toBe(true)
    expect(gate.ignoredReleases).toBe(1)
    expect(await slotsOf(store, 'k', 2)).toBe(1)
    clock.now = 5000 // b's lease lapsed (renewals run on the real clock, far slower)
    await b.slot!.release()
    expect(gate.ignoredReleases).toBe(2)
    const registry = new Registry()
    prometheusMetrics({ registry }).watch('api', limiter)
    expect(await registry.metrics()).toContain(
      'sluice_concurrency_releases_ignored_total{name="api"} 2',
    )
    expect(gate.held).toBe(0)
    expect(await slotsOf(store, 'k', 2, 5000)).toBe(0)
  })

  test('all or nothing with rate limits, both ways', async () => {
    const store = new MemoryStore()
    const limiter = createLimiter({
      limit: 2,
      window: 60_000,
      concurrency: 5,
      store,
      clock: () => 0,
    })
    const first = await limiter.consume('k')
    expect(first.policies.map((p) => p.policy.name)).toEqual(['2-per-1m', '5-concurrent'])
    await limiter.consume('k')
    // The rate limit refuses the third: its slot goes back at once.
    const third = await limiter.consume('k')
    expect([third.allowed, third.policy.name, third.slot]).toEqual([false, '2-per-1m', undefined])
    expect(await slotsOf(store, 'k', 5)).toBe(2)

    // The slots refuse: the rate limit is not charged.
    const tight = createLimiter({
      limit: 10,
      window: 60_000,
      concurrency: 1,
      store,
      clock: () => 0,
    })
    const holder = await tight.consume('t')
    const refused = await tight.consume('t')
    expect([refused.allowed, refused.policy.name, refused.retryAfterMs]).toEqual([
      false,
      '1-concurrent',
      1000,
    ])
    await holder.slot!.release()
    expect((await tight.peek('t')).remaining).toBe(9) // only the admitted one counted
  })

  test('a slot of a process that died lapses after leaseMs, not before', async () => {
    const store = new MemoryStore()
    const clock = { now: 0 }
    const limiter = createLimiter({
      concurrency: { concurrency: 1, leaseMs: 1000 },
      store,
      clock: () => clock.now,
    })
    // A holder that never renews nor releases, as a killed process leaves it.
    const key = concurrencySlotKey('k', 1)
    await store.slots.acquire({ key, holder: 'dead', limit: 1, leaseMs: 1000, now: 0 })
    clock.now = 999
    expect((await limiter.consume('k')).allowed).toBe(false)
    clock.now = 1000
    expect((await limiter.consume('k')).allowed).toBe(true)
  })

  test('a long request keeps its slot: the lease is renewed while it runs', async () => {
    const store = new MemoryStore()
    const limiter = createLimiter({ concurrency: { concurrency: 1, leaseMs: 300 }, store })
    const held = await limiter.consume('k')
    await sleep(1000) // over three leases
    expect((await limiter.consume('k')).allowed).toBe(false)
    await held.slot!.release()
    expect((await limiter.consume('k')).allowed).toBe(true)
  })

  test('waiting: first come, first served, bounded, up to maxWaitMs', async () => {
    const store = new MemoryStore()
    const limiter = createLimiter({
      concurrency: { concurrency: 1, maxWaitMs: 500, maxWaiting: 2 },
      store,
    })
    const gate = gateOf(limiter)!
    const first = await limiter.consume('k')
    const order: string[] = []
    const second = limiter.consume('k').then((d) => (order.push('second'), d))
    await sleep(5)
    const third = limiter.consume('k').then((d) => (order.push('third'), d))
    await sleep(5)
    expect(gate.waiting).toBe(2)
    // What a recorder reads of it now: 1 slot held, 2 waiting.
    const registry = new Registry()
    prometheusMetrics({ registry }).watch('uploads', limiter)
    const text = await registry.metrics()
    expect(text).toContain('sluice_concurrency_slots_in_flight{name="uploads"} 1')
    expect(text).toContain('sluice_requests_waiting{name="uploads"} 2')
    expect((await limiter.consume('k')).allowed).toBe(false) // the queue is full: at once
    await first.slot!.release()
    const got = await second
    expect(got.allowed).toBe(true)
    await got.slot!.release()
    const last = await third
    expect(order).toEqual(['second', 'third'])
    expect(last.allowed).toBe(true)
    // Nobody releases: a waiter gives up after maxWaitMs.
    const started = performance.now()
    expect((await limiter.consume('k')).allowed).toBe(false)
    expect(performance.now() - started).toBeGreaterThanOrEqual(490)
    await last.slot!.release()
    expect(gate.waiting).toBe(0)
  })

  test('a store that hangs: onStoreError answers, and the late grant is given back', async () => {
    const inner = new MemoryStore()
    let hang: (() => void) | undefined
    const hanging = sharedOver(inner, {
      acquire: (r: SlotRequest) =>
        new Promise<SlotReply>((resolve) => {
          void inner.slots.acquire(r).then((reply) => (hang = () => resolve(reply)))
        }),
      renew: (r) => inner.slots.renew(r),
      release: (r) => inner.slots.release(r),
      count: (k, now) => inner.slots.count(k, now),
    })
    const limiter = createLimiter({
      concurrency: { concurrency: 2, leaseMs: 300 },
      store: hanging,
      timeoutMs: 50,
      onStoreError: 'allow',
      logger: { warn: () => {} },
    })
    const answered = await limiter.consume('k')
    expect([answered.allowed, answered.degraded, answered.slot]).toEqual([true, true, undefined])
    expect(await inner.slots.count(concurrencySlotKey('k', 2), Date.now())).toBe(1) // the store took it meanwhile
    hang!() // the late reply: granted
    await sleep(10)
    expect(await inner.slots.count(concurrencySlotKey('k', 2), Date.now())).toBe(0)
    expect(gateOf(limiter)!.held).toBe(0)
  })

  test('a local tier passes slots to its shared store; slot decisions reach onDecision', async () => {
    const shared = new MemoryStore()
    const tier = localTier(shared)
    const events: [string, boolean][] = []
    const limiter = createLimiter({
      concurrency: 1,
      store: tier,
      onDecision: (e) => void events.push([e.policy, e.allowed]),
    })
    const held = await limiter.consume('k')
    expect((await limiter.consume('k')).allowed).toBe(false)
    expect(await shared.slots.count(concurrencySlotKey('k', 1), Date.now())).toBe(1)
    await held.slot!.release()
    expect(await shared.slots.count(concurrencySlotKey('k', 1), Date.now())).toBe(0)
    expect(events).toEqual([
      ['1-concurrent', true],
      ['1-concurrent', false],
    ])
    await tier.close()
  })

  test('failed renewals are logged once, not once per slot and renewal', async () => {
    const inner = new MemoryStore()
    const warnings: string[] = []
    const store = sharedOver(inner, {
      acquire: (r) => inner.slots.acquire(r),
      renew: () => Promise.reject(new Error('store is down')),
      release: (r) => inner.slots.release(r),
      count: (k, now) => inner.slots.count(k, now),
    })
    const limiter = createLimiter({
      concurrency: { concurrency: 3, leaseMs: 60 },
      store,
      timeoutMs: 20,
      breaker: false,
      logger: { warn: (m) => void warnings.push(m) },
    })
    const held = [
      await limiter.consume('k'),
      await limiter.consume('k'),
      await limiter.consume('k'),
    ]
    await sleep(200) // about ten renewals each, all failing
    const slotLines = warnings.filter((w) => w.includes('concurrency slot'))
    expect(slotLines).toHaveLength(1) // beside the store's own outage line
    expect(slotLines[0]).toContain('logged once until one succeeds')
    await Promise.all(held.map((d) => d.slot!.release()))
  })

  test('IETF headers: quota unit concurrent-requests, remaining = free slots', async () => {
    const limiter = createLimiter({ limit: 10, window: '1m', concurrency: 3, clock: () => 0 })
    const d = await limiter.consume('k')
    const times = responseTimes(d, d.at, 'delta')
    const draft8 = createHeaderWriter({
      legacy: false,
      standard: 'draft-8',
      resetStyle: 'delta',
      retryAfter: true,
    })
    expect(Object.fromEntries(draft8(d, times))).toEqual({
      'RateLimit-Policy': '"10-per-1m";q=10;w=60, "3-concurrent";q=3;qu="concurrent-requests"',
      RateLimit: '"10-per-1m";r=9;t=60, "3-concurrent";r=2',
    })
    const draft6 = createHeaderWriter({
      legacy: false,
      standard: 'draft-6',
      resetStyle: 'delta',
      retryAfter: true,
    })
    expect(draft6(d, times)[0]).toEqual(['RateLimit-Policy', '10;w=60, 3;qu="concurrent-requests"'])
  })

  test('bad input names the option and the value', async () => {
    const make = (options: object) => createLimiter(options as never)
    expect(() => make({ concurrency: 0 })).toThrow(
      '`concurrency` must be a whole number of requests from 1 to 2147483647; got 0',
    )
    expect(() => make({ concurrency: -1 })).toThrow('got -1')
    expect(() => make({ concurrency: 2.5 })).toThrow('got 2.5')
    expect(() => make({ concurrency: 2 ** 31 })).toThrow('got 2147483648')
    expect(() => make({ concurrency: { concurrency: 2, leaseMs: 5 } })).toThrow(
      '`concurrency.leaseMs` must be a number of ms from 10 to 3600000; got 5',
    )
    expect(() => make({ concurrency: { concurrency: 2, leaseMs: 3_600_001 } })).toThrow(
      '`concurrency.leaseMs`',
    )
    const remote = sharedOver(new MemoryStore(), new MemoryStore().slots)
    expect(() =>
      make({ concurrency: { concurrency: 2, leaseMs: 2000 }, timeoutMs: 1000, store: remote }),
    ).toThrow('at least 3 x timeoutMs 1000')
    expect(() => make({ concurrency: { concurrency: 2, wait: 1 } })).toThrow('`concurrency.wait`')
    expect(() => make({ concurrency: 2, shadow: true })).toThrow('`shadow`')
    await expect(make({ concurrency: 2 }).wait('k')).rejects.toThrow(
      'wait() takes no concurrency slot',
    )
    const http = (options: object) =>
      createHttpLimiter(options, { framework: 'Test', resetStyle: 'epoch' })
    expect(() => http({ concurrency: 2, queue: { maxWaitMs: 100 }, algorithm: 'gcra' })).toThrow(
      '`queue` must be unset with `concurrency`',
    )
    expect(() => http({ concurrency: 2, rules: { domain: 'd', descriptors: [] } })).toThrow(
      '`concurrency` must be unset when `rules` is given',
    )
    const slotless = sharedOver(new MemoryStore(), undefined)
    expect(() => make({ concurrency: 2, store: slotless })).toThrow(
      '`concurrency` needs a store that keeps slots',
    )
  })
})
