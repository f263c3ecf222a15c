import { join } from 'node:path'
import type { LimiterOptions } from '@sluice/core'
import { PostgresStore } from '@sluice/postgres'
import { startPostgres, type PostgresServer } from '@sluice/testkit'
import { Pool } from 'pg'
import { forkWorker, nextMessage, running, type Worker } from '../../redis/test/workers'

// A limit holds across app servers. Four OS processes, each with its own pool and PostgresStore
// (server time), fire at one key all at once; in total exactly `limit` requests pass, for every
// algorithm. Their batches race on one row: most lose the compare-and-set and finish under
// row locks. Windows are long, so nothing refills while the test runs.
const WORKERS = 4
const ATTEMPTS = 60
const LIMIT = 37

/** A round behind a local tier: leases of at most L = 0.1 x 100 = 10 units per process. */
const TIER_LIMIT = 100
const LEASE = 10

const ROUNDS: (LimiterOptions & { algorithm: string; tier?: { maxShare: number } })[] = [
  { algorithm: 'fixed-window', limit: LIMIT, window: '1d' },
  { algorithm: 'sliding-window', limit: LIMIT, window: '1d' },
  { algorithm: 'sliding-log', limit: LIMIT, window: '1h' },
  { algorithm: 'token-bucket', limit: LIMIT, window: '1d' },
  { algorithm: 'leaky-bucket', limit: LIMIT, window: '1d' },
  { algorithm: 'gcra', limit: LIMIT, window: '1d' },
  // Several limits at once, mixed algorithms: the tighter one binds, all-or-nothing.
  {
    algorithm: 'gcra',
    limits: [
      { algorithm: 'gcra', limit: LIMIT, window: '1d' },
      { algorithm: 'sliding-log', limit: LIMIT + 5, window: '1h' },
    ],
  },
  // Behind localTier: fixed-window's stated bounds (docs/local-tier.md) are no over-admission
  // and at most N x L under.
  { algorithm: 'fixed-window', limit: TIER_LIMIT, window: '1d', tier: { maxShare: 0.1 } },
]

type Message = { ready?: boolean; round?: number; admitted?: number }

describe('no over-admission across processes', () => {
  let server: PostgresServer
  const workers: Worker<Message>[] = []

  beforeAll(async () => {
    server = await startPostgres()
    const pool = new Pool({ connectionString: server.url, max: 1 })
    await new PostgresStore({ client: pool, sweepIntervalMs: false }).migrate()
    await pool.end()
    const script = join(__dirname, 'fixtures', 'hammer.js')
    const rounds = ROUNDS.map(({ algorithm, ...options }) =>
      'limits' in options ? options : { algorithm, ...options },
    )
    const key = `mp:${Date.now()}`
    for (let i = 0; i < WORKERS; i++) {
      workers.push(
        forkWorker<Message>(script, [server.url, key, String(ATTEMPTS), JSON.stringify(rounds)]),
      )
    }
    for (const worker of workers) expect(await nextMessage(worker)).toEqual({ ready: true })
  }, 60_000)

  afterAll(async () => {
    for (const worker of workers) if (running(worker)) worker.child.kill()
    await server?.stop()
  })

  const play = async (round: number): Promise<number> => {
    for (const { child } of workers) child.send('go')
    const results = await Promise.all(workers.map((w) => nextMessage(w)))
    expect(results.map((r) => r.round)).toEqual(workers.map(() => round))
    return results.reduce((sum, r) => sum + (r.admitted ?? 0), 0)
  }

  const exact = ROUNDS.filter((round) => round.tier === undefined)
  test.each(exact.map((round, i) => [i, round.limits ? 'mixed limits' : round.algorithm]))(
    'round %i (%s): exactly the limit is admitted in total',
    async (round) => {
      expect(await play(round)).toBe(LIMIT)
    },
  )

  test('behind a local tier: none over the limit, at most N x L under', async () => {
    const admitted = await play(exact.length)
    expect(admitted).toBeLessThanOrEqual(TIER_LIMIT)
    expect(admitted).toBeGreaterThanOrEqual(TIER_LIMIT - WORKERS * LEASE)
  })
})
