/**
 * Owns the scenarios over a real redis-server: decided when the store answers.
 */
import { Redis } from 'ioredis'
import { RedisStore } from '@sluice/redis'
import { startRedis, type RedisServer } from '../servers'
import { type ScenarioContext } from './harness'

export function registerRedisCases(ctx: ScenarioContext): void {
  const { startFixedMinute, passUpToTheLimit } = ctx
  let redis: RedisServer
  let client: Redis
  beforeAll(async () => {
    redis = await startRedis()
    client = new Redis({ host: redis.host, port: redis.port })
  })
  afterAll(async () => {
    client.disconnect()
    await redis.stop()
  })

  test('admitted requests go on with their headers and decision, the next one is 429', async () => {
    const { agent, clock } = await startFixedMinute(2, {
      // Client time: the fake clock decides, so every figure below is exact.
      store: new RedisStore({ client, time: 'client', prefix: `http-${Date.now()}` }),
    })
    const limited = await passUpToTheLimit(agent, clock, 2)
    expect(limited.body).toMatchObject({ error: 'Too Many Requests', retryAfter: 20 })
    // Many at once (batched in Redis as they come): each request gets its own answer.
    clock.now += 20_000
    const burst = await Promise.all([0, 1, 2, 3].map(() => agent.get('/')))
    expect(burst.map((r) => r.status).sort()).toEqual([200, 200, 429, 429])
  })
}
