import request from 'supertest'
import type { Limiter } from '@sluice/core'

// examples/llm-gateway: tokens per user per minute and per day, reserved before the model
// runs and settled after, when the real usage is known.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const example = require('../../../examples/llm-gateway/app.js') as {
  createApp(options: {
    model?: (input: { prompt: string; maxTokens: number }) => Promise<unknown>
    limiterOptions?: { clock?: () => number }
  }): { app: import('express').Express; tokens: Limiter }
}

const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE

function gateway(usedTokens: (maxTokens: number) => number | Error) {
  const clock = { now: 100 * DAY + 1000 }
  const { app, tokens } = example.createApp({
    model: async ({ prompt, maxTokens }) => {
      const used = usedTokens(maxTokens)
      if (used instanceof Error) throw used
      return { text: prompt, usage: { totalTokens: used } }
    },
    limiterOptions: { clock: () => clock.now },
  })
  app.use((_error: Error, _req: unknown, res: import('express').Response, _next: unknown) => {
    res.status(502).json({ error: 'upstream failed' })
  })
  const complete = (maxTokens: number, user = 'u1') =>
    request(app)
      .post('/v1/completions')
      .set('x-user-id', user)
      .send({ prompt: 'x'.repeat(40), max_tokens: maxTokens }) // 10 prompt tokens
  const left = async (user = 'u1') =>
    (await tokens.peek(user)).policies.map((policy) => policy.remaining)
  return { clock, complete, left }
}

describe('examples/llm-gateway', () => {
  test('a completion that used less than reserved is charged what it used', async () => {
    const { complete, left } = gateway(() => 300)
    const res = await complete(990).expect(200)
    expect(res.body.usage).toEqual({ reserved: 1000, used: 300 })
    expect(await left()).toEqual([20_000 - 300, 500_000 - 300])
  })

  test('a completion that used more than reserved is charged the extra', async () => {
    const { complete, left } = gateway(() => 1500)
    await complete(990).expect(200)
    expect(await left()).toEqual([20_000 - 1500, 500_000 - 1500])
  })

  test('a failed upstream call gives the whole reservation back', async () => {
    const { complete, left } = gateway(() => new Error('model unavailable'))
    await complete(990).expect(502)
    expect(await left()).toEqual([20_000, 500_000])
  })

  test('a reservation that does not fit the minute is refused with Retry-After', async () => {
    const { clock, complete, left } = gateway((maxTokens) => maxTokens + 10)
    await complete(14_990).expect(200) // 15,000 used
    clock.now += 20_000
    const refused = await complete(5_990).expect(429) // 6,000 > 5,000 left this minute
    expect(refused.headers['retry-after']).toBe('39') // the minute began 1 s past a boundary
    expect(await left()).toEqual([5_000, 485_000])
    await complete(4_990).expect(200)
  })

  test('the day budget refuses once spent, until the next day', async () => {
    const { clock, complete, left } = gateway((maxTokens) => maxTokens + 10)
    for (let minute = 0; minute < 25; minute++) {
      await complete(19_990).expect(200)
      clock.now += MINUTE
    }
    expect(await left()).toEqual([20_000, 0])
    const refused = await complete(90).expect(429)
    expect(Number(refused.headers['retry-after'])).toBe(
      Math.ceil((DAY - 25 * MINUTE - 1000) / 1000),
    )
  })

  test('a refund after the minute has reset goes to the day only', async () => {
    const { clock, complete, left } = gateway(() => {
      clock.now += MINUTE // the model takes a minute
      return 300
    })
    await complete(990).expect(200)
    // The reservation's minute has ended: its 700 unused tokens cannot be returned into it,
    // and the new minute never held them. The day window still does.
    expect(await left()).toEqual([20_000, 500_000 - 300])
  })
})
