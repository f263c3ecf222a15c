import Koa from 'koa'
import { listen } from '@sluice/testkit'
import ratelimit from '@sluice/koa/compat'

/** What the compat tests' apps record: handled requests, and errors thrown to the upstream middleware. */
export interface Served {
  readonly url: string
  /** Requests that reached the handler after the limiter. */
  readonly hits: () => number
  /** Errors the upstream middleware caught (status, message, headers), in order. */
  readonly errors: Array<{ status: number; message: string; headers: Record<string, unknown> }>
  close(): Promise<void>
}

/**
 * A Koa app on a real socket: an upstream middleware that records thrown errors (and rethrows
 * them to Koa), the compat middleware with `options`, and a handler answering 'ok'.
 */
export async function serve(
  options: ratelimit.Options,
  setup: (app: Koa) => void = () => {},
): Promise<Served> {
  const app = new Koa()
  app.silent = true
  setup(app)
  const errors: Served['errors'] = []
  let hits = 0
  app.use(async (_ctx, next) => {
    try {
      await next()
    } catch (error) {
      const { status, message, headers } = error as Served['errors'][number]
      errors.push({ status, message, headers })
      throw error
    }
  })
  const middleware = ratelimit(options)
  app.use(middleware)
  app.use((ctx) => {
    hits++
    ctx.body = 'ok'
  })
  const served = await listen(app.callback())
  const { port } = served.server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    hits: () => hits,
    errors,
    close: () => {
      middleware.close()
      return served.close()
    },
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
