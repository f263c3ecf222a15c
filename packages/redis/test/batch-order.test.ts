/**
 * Operations made in one turn reach Redis in the order made: a consume held for the turn's
 * batch goes out before a peek, refund, penalty, block or reset made after it, as MemoryStore
 * runs them.
 */
import { createLimiter, MemoryStore, type Limiter, type Store } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { useRedisServer } from './fixtures/redis-server'

const redis = useRedisServer()
let prefixes = 0

/** What each sequence leaves, on `store`. */
async function sequences(store: () => Store): Promise<number[]> {
  const limiter = (): Limiter =>
    createLimiter({
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
      store: store(),
      clock: () => 60_000 * 1000,
    })
  const left: number[] = []
  let l = limiter()
  const [, peeked] = await Promise.all([l.consume('a'), l.peek('a')])
  left.push(peeked.remaining)
  l = limiter()
  const consumed = l.consume('b')
  await l.reset('b')
  await consumed
  left.push((await l.peek('b')).remaining)
  l = limiter()
  await Promise.all([l.consume('c'), l.penalize('c', 2)])
  left.push((await l.peek('c')).remaining)
  l = limiter()
  const blocked = l.consume('d')
  await l.block('d', 5000)
  await blocked
  left.push((await l.peek('d')).remaining)
  return left
}

test('a batched consume goes out before the operations made after it in its turn', async () => {
  const memory = await sequences(() => new MemoryStore())
  expect(memory).toEqual([4, 5, 2, 0])
  const onRedis = await sequences(
    () => new RedisStore({ client: redis.connect(), time: 'client', prefix: `o${prefixes++}` }),
  )
  expect(onRedis).toEqual(memory)
})
