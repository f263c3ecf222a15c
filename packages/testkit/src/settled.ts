// Waiting until a shared store has answered every call out: late replies and their refunds.
import { setTimeout as delay } from 'node:timers/promises'
import { storeHealth } from '@sluice/core'

/** Resolves once no call to `store` is out; fails the test after about 3 s. */
export async function storeSettled(store: object): Promise<void> {
  for (let i = 0; i < 300 && (storeHealth(store)?.inFlight ?? 0) > 0; i++) await delay(10)
  const left = storeHealth(store)?.inFlight ?? 0
  if (left > 0) throw new Error(`${left} store calls still out after 3 s`)
}

/**
 * Resolves once `limiter` reaches its store (a peek on `${key}:warm` answered by the store, not
 * by onStoreError); fails the test after about 1 s. A client's first connection can take longer
 * than a fault test's short timeoutMs on a busy machine: a test that counts exactly opens it
 * first, so its first charge is not answered by onStoreError.
 */
export async function storeReached(
  limiter: { peek(key: string): Promise<{ degraded: boolean }> },
  key: string,
): Promise<void> {
  for (let i = 0; i < 20; i++) {
    if (!(await limiter.peek(`${key}:warm`)).degraded) return
    await delay(50)
  }
  throw new Error('the store was not reached within 1 s')
}
