import {
  createLimiter,
  MemoryStore,
  type Decision,
  type LimiterOptions,
  type Store,
  type StoreRefund,
  type StoreRequest,
  type StoreResult,
} from '@sluice/core'
import { buildLimiter } from '@sluice/core/adapter'
import { concurrencySlotKey } from '../src/concurrency/slots'
import type { SlotReply, SlotRequest } from '../src/concurrency/slots'
import { RequestDeadlines } from '../src/store-call/deadlines'

// Regression: a consume whose store call timed out was answered without the store, and the
// refund of what the store did late ran in the background, which Cloudflare Workers cancel once
// the response is returned (the charge stayed). ConsumeOptions.waitUntil hands that work to
// the platform: only when a call timed out, once, with a promise that settles after the refund.
// In real workerd: packages/cloudflare/test/late-reply.test.ts.

/** Resolves after `ms`. */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A shared store over `memory` that decides each consume at once but replies only when the test
 * says (`reply()`), and whose refunds wait for `refund()` likewise: the late work, held.
 */
function lateStore(memory = new MemoryStore()) {
  const replies: Array<() => void> = []
  const refunds: Array<() => void> = []
  const hold = (list: Array<() => void>) => new Promise<void>((done) => list.push(done))
  const store: Store = {
    async consume(request: StoreRequest): Promise<StoreResult> {
      const result = await memory.consume(request)
      await hold(replies)
      return result
    },
    async refund(request: StoreRefund) {
      await hold(refunds)
      return memory.refund(request)
    },
    peek: (request) => memory.peek(request),
    penalize: (request) => memory.penalize(request),
    block: (request) => memory.block(request),
    reset: (key, policies) => memory.reset(key, policies),
  }
  const release = (list: Array<() => void>) => list.splice(0).forEach((done) => done())
  return { store, memory, reply: () => release(replies), refund: () => release(refunds) }
}

const quiet = { warn: () => {} }
const options = (store: Store): LimiterOptions => ({
  limit: 5,
  window: '1h',
  store,
  clock: () => 1_000_000,
  timeoutMs: 30,
  onStoreError: 'allow',
  logger: quiet,
})

/** The count left for `key`, read straight from the memory store. */
async function left(memory: MemoryStore, key: string): Promise<number> {
  return (await createLimiter({ ...options(memory), store: memory }).peek(key)).remaining
}

/** A waitUntil that records what it is given and whether each has settled. */
function recorder() {
  const given: Array<{ settled: boolean }> = []
  const waitUntil = (promise: Promise<unknown>) => {
    const entry = { settled: false }
    given.push(entry)
    void promise.then(() => (entry.settled = true))
  }
  return { given, waitUntil }
}

test('waitUntil gets nothing when the store answers in time, or when the store is in-process', async () => {
  const { given, waitUntil } = recorder()
  const held = lateStore()
  const pending = createLimiter(options(held.store)).consume('k', { waitUntil })
  await sleep(5)
  held.reply() // within timeoutMs (30 ms)
  expect(await pending).toMatchObject({ allowed: true, degraded: false })
  const inProcess = createLimiter(options(new MemoryStore()))
  expect(await inProcess.consume('k', { waitUntil })).toMatchObject({ allowed: true })
  await sleep(60)
  expect(given).toEqual([])
})

test('a timed-out consume hands waitUntil one promise, settled once the late charge is refunded', async () => {
  const { store, memory, reply, refund } = lateStore()
  const limiter = createLimiter(options(store))
  const { given, waitUntil } = recorder()
  let handedBeforeAnswer = false
  const decision = await limiter.consume('k', {
    waitUntil: (promise) => {
      waitUntil(promise)
      handedBeforeAnswer = true
    },
  })
  // Handed over before the request was answered (while it is still open on Workers).
  expect(handedBeforeAnswer).toBe(true)
  expect(decision).toMatchObject({ allowed: true, degraded: true })
  expect(given).toEqual([{ settled: false }])
  expect(await left(memory, 'k')).toBe(4) // the store charged it meanwhile
  reply() // the late reply: its refund goes out, and is held
  await sleep(20)
  expect(given).toEqual([{ settled: false }])
  refund()
  await sleep(20)
  expect(given).toEqual([{ settled: true }])
  expect(await left(memory, 'k')).toBe(5)
})

test('the HTTP fast path (consumeDirect) passes waitUntil on', async () => {
  const { store, memory, reply, refund } = lateStore()
  const { consumeDirect } = buildLimiter(options(store))
  const { given, waitUntil } = recorder()
  const decision = (await consumeDirect('k', 1, waitUntil)) as Decision
  expect(decision.degraded).toBe(true)
  expect(given).toHaveLength(1)
  reply()
  await sleep(10)
  refund()
  await sleep(10)
  expect(given).toEqual([{ settled: true }])
  expect(await left(memory, 'k')).toBe(5)
})

test('a late concurrency slot is released within the promise waitUntil gets', async () => {
  const memory = new MemoryStore()
  const grants: Array<() => void> = []
  const store: Store = {
    ...lateStore(memory).store,
    slots: {
      acquire: (r: SlotRequest) =>
        new Promise<SlotReply>((resolve) => {
          void memory.slots.acquire(r).then((reply) => grants.push(() => resolve(reply)))
        }),
      renew: (r) => memory.slots.renew(r),
      release: (r) => memory.slots.release(r),
      count: (k, now) => memory.slots.count(k, now),
    },
  }
  const limiter = createLimiter({
    ...options(store),
    limit: undefined,
    window: undefined,
    concurrency: 2,
  })
  const { given, waitUntil } = recorder()
  expect(await limiter.consume('k', { waitUntil })).toMatchObject({ degraded: true })
  expect(given).toEqual([{ settled: false }])
  expect(await memory.slots.count(concurrencySlotKey('k', 2), 1_000_000)).toBe(1)
  grants.forEach((grant) => grant())
  await sleep(20)
  expect(given).toEqual([{ settled: true }])
  expect(await memory.slots.count(concurrencySlotKey('k', 2), 1_000_000)).toBe(0)
})

test('a waitUntil that throws changes no decision, is logged once, and the refund still runs', async () => {
  const { store, memory, reply, refund } = lateStore()
  const warnings: string[] = []
  const limiter = createLimiter({ ...options(store), logger: { warn: (m) => warnings.push(m) } })
  const broken = () => {
    throw new Error('waitUntil after the response')
  }
  const decisions = [
    await limiter.consume('k', { waitUntil: broken }),
    await limiter.consume('k', { waitUntil: broken }),
  ]
  expect(decisions.map((d) => [d.allowed, d.degraded])).toEqual([
    [true, true],
    [true, true],
  ])
  expect(warnings.filter((w) => w.includes('waitUntil threw'))).toEqual([
    expect.stringContaining('waitUntil after the response'),
  ])
  reply()
  await sleep(10)
  refund()
  await sleep(10)
  expect(await left(memory, 'k')).toBe(5)
})

test('waitUntil must be a function', async () => {
  const limiter = createLimiter(options(lateStore().store))
  await expect(limiter.consume('k', { waitUntil: 'ctx' as never })).rejects.toThrow(
    /`waitUntil` must be a function \(promise\) => void, e\.g\. ctx\.waitUntil; got "ctx"/,
  )
})

test('per-request deadlines (Workers): a timer per call, cleared when it settles in time', async () => {
  const deadlines = new RequestDeadlines(20)
  const failed: string[] = []
  const answered = deadlines.add((error) => failed.push(`answered: ${error.code}`))
  const hung = deadlines.add((error) => failed.push(`hung: ${error.code}`))
  deadlines.settle(answered)
  await sleep(50)
  expect(failed).toEqual(['hung: ERR_SLUICE_STORE_TIMEOUT'])
  expect([answered.settled, hung.settled]).toEqual([true, true])
})
