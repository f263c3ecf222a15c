// examples/postgres: an Express app on PostgresStore, against a real server.
import { startPostgres, type PostgresServer } from '@sluice/testkit'
import request from 'supertest'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const example = require('../../../examples/postgres/app.js') as {
  createApp(options: { databaseUrl: string }): Promise<{
    app: import('express').Express
    close(): Promise<void>
  }>
}

let server: PostgresServer

beforeAll(async () => {
  server = await startPostgres()
})

afterAll(async () => {
  await server?.stop()
})

test('5 requests pass, the 6th is refused, and two instances share the count', async () => {
  const one = await example.createApp({ databaseUrl: server.url })
  const two = await example.createApp({ databaseUrl: server.url })
  const statuses: number[] = []
  for (let i = 0; i < 6; i++) {
    const app = i % 2 === 0 ? one.app : two.app
    statuses.push((await request(app).get('/')).status)
  }
  expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
  await one.close()
  await two.close()
})
