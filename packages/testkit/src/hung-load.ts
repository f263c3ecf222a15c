/** Owns the load a timeout test puts on a hung store: paced decisions, each one's latency. */
import { fork } from 'node:child_process'
import { setPriority } from 'node:os'
import { join } from 'node:path'
import { createLimiter, type Store } from '@sluice/core'
import { latenciesOf } from './stalls'

/** A server that can hang with its connections open (SIGSTOP) and wake (SIGCONT). */
export interface Pausable {
  pause(): void
  resume(): void
}

/**
 * 10,000 decisions a second (50 every 5 ms) for 0.6 s at `store` while its server hangs: 6,000
 * calls out, most timing out while others are being sent, answered by `onStoreError: 'deny'`.
 * Resolves with each decision's latency in ms, from its own start. A first round of 500 runs
 * the path once before anything is timed; the breaker is off so that round leaves it closed.
 */
export async function latencyRounds(
  store: Store,
  timeoutMs: number,
  server: { pause(): Promise<unknown>; resume(): Promise<unknown> },
): Promise<number[]> {
  const limiter = createLimiter({
    store,
    limit: 10,
    window: '1h',
    timeoutMs,
    onStoreError: 'deny',
    breaker: false,
    maxInFlight: 10_000,
    logger: { warn: () => undefined },
  })
  await limiter.consume('load:warm')
  await server.pause()
  try {
    await latenciesOf(500, (i) => limiter.consume(`load:${i}`))
    return await latenciesOf(6000, (i) => limiter.consume(`load:${i % 500}`), {
      perBatch: 50,
      gapMs: 5,
    })
  } finally {
    await server.resume()
  }
}

/**
 * latencyRounds against a RedisStore, MemcachedStore or PostgresStore on `server`, run in a process of its own
 * (fixtures/hung-load.js): a fresh heap, as a server's, so that the test runner's full
 * collections are not timed as the store's, at a raised scheduling priority where allowed.
 */
export function latenciesWhileHung(
  kind: 'redis' | 'memcached' | 'postgres',
  server: Pausable & { port: number },
  timeoutMs: number,
): Promise<number[]> {
  const child = fork(
    join(__dirname, '..', 'fixtures', 'hung-load.js'),
    [kind, String(server.port), String(timeoutMs)],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  )
  // First in line for the cores: the bound is the limiter's, and the test runner's other
  // workers on the same two cores would otherwise be timed as its latency. Where raising a
  // priority is not permitted, the load runs as it is.
  try {
    if (child.pid !== undefined) setPriority(child.pid, -10)
  } catch {
    // measured at the default priority
  }
  return new Promise((resolve, reject) => {
    child.on('message', (message: { ask?: 'pause' | 'resume'; latencies?: number[] }) => {
      if (message.ask === 'pause') server.pause()
      if (message.ask === 'resume') server.resume()
      if (message.ask !== undefined) child.send('done')
      if (message.latencies !== undefined) resolve(message.latencies)
    })
    child.on('exit', (code) => reject(new Error(`the load process exited with code ${code}`)))
  })
}
