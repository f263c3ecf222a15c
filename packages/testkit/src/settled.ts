// Waiting until a shared store has answered every call out: late replies and their refunds.
import { setTimeout as delay } from 'node:timers/promises'
import { storeHealth } from '@sluice/core'

/** Resolves once no call to `store` is out; fails the test after about 3 s. */
export async function storeSettled(store: object): Promise<void> {
  for (let i = 0; i < 300 && (storeHealth(store)?.inFlight ?? 0) > 0; i++) await delay(10)
  const left = storeHealth(store)?.inFlight ?? 0
  if (left > 0) throw new Error(`${left} store calls still out after 3 s`)
}
