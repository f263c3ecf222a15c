/**
 * The default storage's `increment`, as a guard of the user's own calls it (@nestjs/throttler's
 * WebSocket recipe): counts per key and throttler name, as @nestjs/throttler's storage keeps them.
 */
import { MemoryStore } from '@sluice/core'
import { ThrottlerStorageService } from '@sluice/nest'

test('two throttler names count apart on one key; one name counts once per call', async () => {
  const storage = new ThrottlerStorageService({ store: new MemoryStore(), clock: () => 1_000_000 })
  const hits = async (name: string) =>
    (await storage.increment('client', 60_000, 3, 60_000, name)).totalHits
  expect([await hits('burst'), await hits('burst'), await hits('sustained')]).toEqual([1, 2, 1])
  expect([await hits('default'), await hits('sustained')]).toEqual([1, 2])
  const over = [await hits('burst'), await hits('burst')]
  expect(over).toEqual([3, 4])
  expect((await storage.increment('client', 60_000, 3, 60_000, 'sustained')).isBlocked).toBe(false)
})
