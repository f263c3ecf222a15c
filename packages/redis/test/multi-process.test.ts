import { fork, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import type { LimiterOptions } from '@sluice/core'
import { startRedis, type RedisServer } from '@sluice/testkit'

// The central requirement: a limit holds across app servers. Four OS processes, each with its
// own connection and RedisStore (server time), fire at one key all at once; in total exactly
// `limit` requests pass, for every exact algorithm. Windows are long, so nothing refills
// while the test runs.
const WORKERS = 4
const ATTEMPTS = 60
const LIMIT = 37

const ROUNDS: (LimiterOptions & { algorithm: string })[] = [
  { algorithm: 'fixed-window', limit: LIMIT, window: '1d' },
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
]

interface Worker {
  child: ChildProcess
  messages: { ready?: boolean; round?: number; admitted?: number }[]
  waiters: (() => void)[]
}

function nextMessage(worker: Worker): Promise<Worker['messages'][number]> {
  return new Promise((resolve, reject) => {
    const take = (): void => {
      const message = worker.messages.shift()
      if (message) resolve(message)
      else if (worker.child.exitCode !== null) reject(new Error('worker exited'))
      else worker.waiters.push(take)
    }
    take()
  })
}

describe('no over-admission across processes', () => {
  let server: RedisServer
  const workers: Worker[] = []

  beforeAll(async () => {
    server = await startRedis()
    const script = join(__dirname, 'fixtures', 'hammer.js')
    const rounds = ROUNDS.map(({ algorithm, ...options }) =>
      'limits' in options ? options : { algorithm, ...options },
    )
    const key = `mp:${Date.now()}`
    for (let i = 0; i < WORKERS; i++) {
      const child = fork(
        script,
        [String(server.port), key, String(ATTEMPTS), JSON.stringify(rounds)],
        { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
      )
      const worker: Worker = { child, messages: [], waiters: [] }
      const wake = (): void => {
        for (const waiter of worker.waiters.splice(0)) waiter()
      }
      child.on('message', (m: Worker['messages'][number]) => {
        worker.messages.push(m)
        wake()
      })
      child.on('exit', wake)
      workers.push(worker)
    }
    for (const worker of workers) expect(await nextMessage(worker)).toEqual({ ready: true })
  }, 30_000)

  afterAll(async () => {
    for (const { child } of workers) if (child.exitCode === null) child.kill()
    await server?.stop()
  })

  test.each(ROUNDS.map((round, i) => [i, round.limits ? 'mixed limits' : round.algorithm]))(
    'round %i (%s): exactly the limit is admitted in total',
    async (round) => {
      for (const { child } of workers) child.send('go')
      const results = await Promise.all(workers.map((w) => nextMessage(w)))
      expect(results.map((r) => r.round)).toEqual(workers.map(() => round))
      const admitted = results.reduce((sum, r) => sum + (r.admitted ?? 0), 0)
      expect(admitted).toBe(LIMIT)
    },
  )
})
