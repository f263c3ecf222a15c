/**
 * Owns a small REST gateway in front of a real redis-server that speaks Upstash's published
 * REST protocol (https://upstash.com/docs/redis/features/restapi), so the real `@upstash/redis`
 * client can be tested without the service: POST of a JSON command array to `/`, a
 * two-dimensional array to `/pipeline` (`[{ result } | { error }]`, one per command), bearer
 * token (or `?_token=`), `Upstash-Encoding: base64` (every string base64 except "OK"), errors as
 * `{ error }` with 400 (a failed command) or 401 (a bad token). Faults for tests: answer the
 * next requests with an HTTP status, or hold them.
 */
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Redis as UpstashRedis, type RedisConfigNodejs } from '@upstash/redis'
import { Redis } from 'ioredis'
import { startRedis } from './servers'
import { HOST } from './servers/types'

export interface UpstashGateway {
  /** `http://127.0.0.1:<port>`, the client's `url`. */
  readonly url: string
  /** The token the gateway accepts, the client's `token`. */
  readonly token: string
  /** Requests answered so far, by path ('/', '/pipeline'), refused ones included. */
  readonly requests: { readonly single: number; readonly pipeline: number }
  /** Answers the next `count` requests with `status` and `{ error }`, running nothing. */
  failNext(status: number, count?: number): void
  /** Holds every request until `release` is called (a REST endpoint that hangs). */
  hold(): void
  /** Runs the held requests, and the next ones at once. */
  release(): void
  close(): Promise<void>
}

type Reply = null | number | string | Buffer | Error | Reply[]

/** A reply in JSON: strings as text, or base64 with the header (except "OK"). */
function encode(reply: Reply, base64: boolean): unknown {
  if (reply === null || typeof reply === 'number') return reply
  if (reply instanceof Error)
    return base64 ? Buffer.from(reply.message).toString('base64') : reply.message
  if (Array.isArray(reply)) return reply.map((r) => encode(r, base64))
  const text = Buffer.isBuffer(reply) ? reply : Buffer.from(reply)
  if (!base64 || text.toString() === 'OK') return text.toString()
  return text.toString('base64')
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString()
}

function isCommand(value: unknown): value is (string | number)[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((v) => typeof v === 'string' || typeof v === 'number')
  )
}

/** Starts the gateway on a free loopback port, forwarding to the Redis at `redisUrl`. */
export async function startUpstashGateway(
  redisUrl: string,
  token = 'sluice-test-token',
): Promise<UpstashGateway> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  redis.on('error', () => undefined)
  const counts = { single: 0, pipeline: 0 }
  let failures: { status: number; count: number } | undefined
  let held: (() => void)[] | undefined

  const run = (command: (string | number)[]): Promise<Reply> => {
    const [name, ...args] = command.map(String)
    return redis.callBuffer(name, ...args) as Promise<Reply>
  }

  const answer = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://gateway')
    const path = url.pathname.replace(/\/$/, '') || '/'
    if (path === '/pipeline') counts.pipeline++
    else counts.single++
    if (failures !== undefined && failures.count > 0) {
      failures.count--
      return send(res, failures.status, { error: `gateway failure ${failures.status}` })
    }
    if (held !== undefined) await new Promise<void>((resume) => held?.push(resume))
    const auth = req.headers.authorization
    const given = auth?.startsWith('Bearer ') ? auth.slice(7) : url.searchParams.get('_token')
    if (given !== token) return send(res, 401, { error: 'Unauthorized' })
    if (req.method !== 'POST') return send(res, 405, { error: 'Method Not Allowed' })
    const base64 = req.headers['upstash-encoding'] === 'base64'
    let body: unknown
    try {
      body = JSON.parse(await readBody(req))
    } catch {
      return send(res, 400, { error: 'ERR failed to parse command' })
    }
    if (path === '/pipeline') {
      if (!Array.isArray(body) || !body.every(isCommand)) {
        return send(res, 400, { error: 'ERR pipeline must be an array of commands' })
      }
      const replies = await Promise.all(
        body.map((command) =>
          run(command).then(
            (result) => ({ result: encode(result, base64) }),
            (error: Error) => ({ error: error.message }),
          ),
        ),
      )
      return send(res, 200, replies)
    }
    if (path !== '/') return send(res, 400, { error: `ERR unsupported path ${path}` })
    if (!isCommand(body)) return send(res, 400, { error: 'ERR command must be an array' })
    try {
      send(res, 200, { result: encode(await run(body), base64) })
    } catch (error) {
      send(res, 400, { error: (error as Error).message })
    }
  }

  const server = createServer((req, res) => {
    answer(req, res).catch((error: unknown) => send(res, 500, { error: String(error) }))
  })
  server.listen(0, HOST)
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  const release = (): void => {
    const waiting = held ?? []
    held = undefined
    for (const resume of waiting) resume()
  }
  return {
    url: `http://${HOST}:${port}`,
    token,
    requests: counts,
    failNext(status, count = 1) {
      failures = { status, count }
    },
    hold() {
      held ??= []
    },
    release,
    async close() {
      release()
      server.closeAllConnections()
      server.close()
      redis.disconnect()
    },
  }
}

/** A real `@upstash/redis` client on a gateway to a launched redis-server, and how to stop both. */
export interface UpstashUnderTest {
  readonly client: UpstashRedis
  readonly gateway: UpstashGateway
  readonly redisUrl: string
  close(): Promise<void>
}

/**
 * A redis-server, a gateway in front of it, and an `@upstash/redis` client on the gateway
 * (`options` beside url and token: `retry`, `signal`...).
 */
export async function upstashUnderTest(
  options: Partial<RedisConfigNodejs> = {},
): Promise<UpstashUnderTest> {
  const server = await startRedis()
  const gateway = await startUpstashGateway(server.url)
  const client = new UpstashRedis({ url: gateway.url, token: gateway.token, ...options })
  return {
    client,
    gateway,
    redisUrl: server.url,
    close: async () => {
      await gateway.close()
      await server.stop()
    },
  }
}
