// examples/nest-basic: two named throttlers, a stricter login route, an unlimited health check,
// on both platforms.
import type { INestApplication } from '@nestjs/common'
import type { Server } from 'node:http'
import request from 'supertest'
import { PLATFORMS } from './helpers'

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the example is a CommonJS script
const example = require('../../../examples/nest-basic/app.js') as {
  createApp(platform: string): Promise<INestApplication>
}

describe.each(PLATFORMS)('examples/nest-basic on %s', (platform) => {
  let app: INestApplication
  afterEach(() => app?.close())

  test('3 a second per client, login 1 per 5 s, health unlimited', async () => {
    app = await example.createApp(platform.toLowerCase())
    await app.listen(0, '127.0.0.1')
    const agent = request(app.getHttpServer() as Server)
    for (const remaining of ['2', '1', '0']) {
      const res = await agent.get('/').expect(200)
      expect(res.headers['x-ratelimit-remaining-short']).toBe(remaining)
    }
    const refused = await agent.get('/').expect(429)
    expect(refused.headers['retry-after-short']).toBe('1')
    expect((await agent.post('/login').expect(201)).headers['x-ratelimit-limit-short']).toBe('1')
    expect((await agent.post('/login').expect(429)).headers['retry-after-short']).toBe('5')
    for (let i = 0; i < 5; i++) {
      const health = await agent.get('/health').expect(200)
      expect(health.headers['x-ratelimit-limit-long']).toBeUndefined()
    }
  })
})
