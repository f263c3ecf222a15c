// Serves middleware on a real Express app listening on a loopback port, for the compatibility
// entry's tests; every server started is closed after each test.
import express, { type RequestHandler } from 'express'
import request from 'supertest'
import { listen, type ScenarioApp } from '@sluice/testkit'

const open: ScenarioApp[] = []

afterEach(async () => {
  await Promise.all(open.splice(0).map((app) => app.close()))
})

export interface Served {
  get(path?: string): request.Test
  app: express.Express
}

/** An app with `middleware`, `/` answering 'ok', `/fail` answering 400; trusts loopback proxies. */
export async function serve(...middleware: RequestHandler[]): Promise<Served> {
  const app = express()
  app.set('trust proxy', 'loopback')
  app.use(...middleware)
  app.get('/', (_req, res) => void res.send('ok'))
  app.get('/fail', (_req, res) => void res.status(400).send('bad'))
  const served = await listen(app)
  open.push(served)
  return { app, get: (path = '/') => request(served.server).get(path) }
}

/** Date.now() fixed at `start`, moved by `advance(ms)`; restored after each test. */
export function fixedNow(start: number): { advance(ms: number): void } {
  let now = start
  jest.spyOn(Date, 'now').mockImplementation(() => now)
  return {
    advance(ms) {
      now += ms
    },
  }
}

afterEach(() => {
  jest.restoreAllMocks()
})
