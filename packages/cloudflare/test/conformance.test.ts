import { join } from 'node:path'
import { DurableObjectStore } from '@sluice/cloudflare'
import {
  StoreError,
  createLimiter,
  type Policy,
  type Store,
  type StoreBlock,
  type StoreRefund,
  type StoreRequest,
  type StoreResult,
} from '@sluice/core'
import { bundleWorker, describeStoreConformance } from '@sluice/testkit'
import { Miniflare } from 'miniflare'
import { decode, encode, type Answer } from '../src/wire'

// The conformance suite on DurableObjectStore running in real workerd (Miniflare): a test-only
// Worker (fixtures/store-worker.ts) runs each store operation jest asks for over fetch, and the
// store sends it on to the SluiceLimiterObject that owns the key.

interface Pending {
  readonly op: string
  readonly args: unknown[]
  resolve(answer: Answer): void
  reject(error: unknown): void
}

/**
 * The Store contract, each call run by the Worker in workerd. The calls of one microtask go in
 * one request, which the Worker starts in the order made without waiting for each (as an app's
 * concurrent decisions): concurrent requests from jest could reach workerd in any order.
 */
class WorkerStore implements Store {
  private pending: Pending[] = []

  constructor(private readonly mf: Miniflare) {}

  private call(op: string, args: unknown[]): Promise<Answer> {
    return new Promise((resolve, reject) => {
      if (this.pending.length === 0) queueMicrotask(() => this.flush())
      this.pending.push({ op, args, resolve, reject })
    })
  }

  private flush(): void {
    const batch = this.pending
    this.pending = []
    const body = encode(batch.map(({ op, args }) => ({ op, args })) as never)
    this.mf
      .dispatchFetch('http://store.test/', { method: 'POST', body })
      .then((response) => response.text())
      .then(
        (text) => {
          const answers = decode<never>(text) as unknown as Answer[]
          batch.forEach(({ resolve, reject }, i) => {
            const answer = answers[i]
            if (answer.error !== undefined) reject(new StoreError(answer.error))
            else resolve(answer)
          })
        },
        (error: unknown) => batch.forEach(({ reject }) => reject(error)),
      )
  }

  async consume(request: StoreRequest): Promise<StoreResult> {
    const { outcomes = [], at } = await this.call('consume', [request])
    return at === undefined ? { outcomes } : { outcomes, at }
  }

  async peek(request: StoreRequest): Promise<StoreResult> {
    return { outcomes: (await this.call('peek', [request])).outcomes ?? [] }
  }

  async refund(request: StoreRefund): Promise<void> {
    await this.call('refund', [request])
  }

  async penalize(request: StoreRequest): Promise<void> {
    await this.call('penalize', [request])
  }

  async block(request: StoreBlock): Promise<void> {
    await this.call('block', [request])
  }

  async reset(key: string, policies: readonly Policy[], keys?: readonly string[]): Promise<void> {
    await this.call('reset', [key, policies, keys])
  }

  /** The store's own rule, which it applies without a call. */
  checkPolicy(policy: Policy): void {
    DurableObjectStore.prototype.checkPolicy.call(undefined, policy)
  }
}

/** workerd running fixtures/store-worker.ts with `bindings` (SLUICE_TIME: whose clock decides). */
async function storeWorker(bindings: Record<string, string> = {}): Promise<Miniflare> {
  const script = await bundleWorker(join(__dirname, 'fixtures/store-worker.ts'))
  const mf = new Miniflare({
    modules: true,
    script,
    compatibilityDate: '2025-04-01',
    durableObjects: { SLUICE_LIMITER: 'SluiceLimiterObject' },
    bindings,
  })
  await mf.ready
  return mf
}

describeStoreConformance(
  'DurableObjectStore in workerd (Miniflare)',
  async () => {
    const mf = await storeWorker()
    return { store: new WorkerStore(mf), close: () => mf.dispose() }
  },
  { traceRuns: 30 },
)

test('a key longer than a storage key may be (2 KiB) is counted under its hash', async () => {
  const mf = await storeWorker()
  try {
    // The first call starts the object: no timeout to race it.
    const store = new WorkerStore(mf)
    const limiter = createLimiter({ limit: 3, window: '1m', store, timeoutMs: 10_000 })
    const long = 'k'.repeat(3000)
    const remaining = []
    for (let i = 0; i < 4; i++) remaining.push((await limiter.consume(long)).remaining)
    expect(remaining).toEqual([2, 1, 0, 0])
    // A key that differs only past the first 1024 characters has a count of its own.
    expect((await limiter.consume(`${long}x`)).remaining).toBe(2)
  } finally {
    await mf.dispose()
  }
})

test("time: 'object': a consume says when the object charged, and a refund there on the object's clock removes exactly that sliding-log entry", async () => {
  const mf = await storeWorker({ SLUICE_TIME: 'object' })
  try {
    const store = new WorkerStore(mf)
    const [policy] = createLimiter({
      limit: 3,
      window: '1m',
      algorithm: 'sliding-log',
      store,
    }).policies
    const request = { key: 'late', policies: [policy], cost: 1, now: 0 }
    const first = await store.consume(request)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const second = await store.consume(request)
    expect([first.outcomes[0].remaining, second.outcomes[0].remaining]).toEqual([2, 1])
    // The object's clock, not the request's now (0), and the second charge came later.
    expect(first.at).toBeGreaterThan(1_000_000_000_000)
    expect(second.at).toBeGreaterThan(first.at as number)
    const left = async () => (await store.peek({ ...request, cost: 0 })).outcomes[0].remaining
    // The refund of the first charge, as a late reply's (core's chargedRefund) makes it.
    const at = first.at as number
    await store.refund({ ...request, now: at, at, storeClock: true })
    expect(await left()).toBe(2)
    // Exactly that entry went: refunding it again finds nothing at `at` to remove.
    await store.refund({ ...request, now: at, at, storeClock: true })
    expect(await left()).toBe(2)
  } finally {
    await mf.dispose()
  }
})
