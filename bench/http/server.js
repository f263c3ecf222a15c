'use strict'
// One HTTP server for bench/http.js: node bench/http/server.js <framework> <variant> [redisPort]
// Prints "ready <port>" once listening. Admitting variants use a limit no run reaches; the
// rejecting ones (`*-reject`) a limit of 1 per hour, so every request after the first gets 429.
// The `floor` variant is no limiter, only a middleware (a hook, for Fastify) that sets the same
// three rate-limit headers Sluice sets by default: what a limiter answering with them pays at least.
// `floor-reject` (instruction counts only) answers every request as Sluice's 429 does, with the
// same five headers and JSON body, from a bare middleware: what any limiter's 429 costs at least.
// `least` (instruction counts only) is the least limiter that sets those headers (leastLimiter).
// `store-hook` (instruction counts only, Fastify) calls Sluice's memory store from a hook of
// its own, with none of the HTTP pipeline (storeHook).
const [framework, variant, redisPort] = process.argv.slice(2)
const reject = variant.endsWith('-reject')
const kind = variant.replace(/-reject$/, '') // none | floor | least | store-hook | sluice-memory | peer-memory | sluice-redis | peer-redis
const LIMIT = reject ? 1 : 1_000_000_000
const WINDOW_MS = reject ? 3_600_000 : 60_000

/**
 * A full garbage collection just before the server listens (node runs it with --expose-gc),
 * the same for every variant. Without it, the first incremental mark of the old generation
 * falls in the warm-up, while V8 first optimises Node's HTTP internals; when the two overlap,
 * the optimised code of process.nextTick can be left calling the runtime to build each tick
 * object, which costs every request about 2.5 µs of CPU for the life of the process (Fastify,
 * measured with perf). Which process falls into that mode is luck and start-up allocation, not
 * the limiter's code, so it would decide a variant's figure. See docs/benchmarks.md.
 */
function collectBeforeLoad() {
  if (typeof globalThis.gc === 'function') globalThis.gc()
}

/**
 * The values a limiter would send: the limit, what remains, and when the window resets, in
 * seconds from now (`delta`, as @sluice/fastify sends it) or since the epoch; one clock read.
 */
function floorValues(delta) {
  const windowSeconds = WINDOW_MS / 1000
  const now = Math.ceil(Date.now() / 1000)
  const reset = delta ? windowSeconds - (now % windowSeconds) : now + windowSeconds
  return ['1000000000', '999999999', String(reset)]
}

/** The 429 a limiter sends: its five headers and JSON body (`statusCode` in it on Fastify). */
function floorRejection(delta, withStatusCode) {
  const [, , reset] = floorValues(delta)
  const wait = delta ? reset : String(Number(reset) - Math.floor(Date.now() / 1000))
  const headers = [
    ['X-RateLimit-Limit', '1'],
    ['X-RateLimit-Remaining', '0'],
    ['X-RateLimit-Reset', reset],
    ['Retry-After', wait],
    ['X-RateLimit-Retry-After', wait],
  ]
  const status = withStatusCode ? '"statusCode":429,' : ''
  const body = `{${status}"error":"Too Many Requests","message":"Too many requests, please try again in ${wait} seconds.","retryAfter":${wait}}`
  return { headers, body }
}

/**
 * The least a limiter does (the `least` variant, instruction counts only): Sluice's default
 * algorithm (a sliding window of two counters) in a Map of one object per client address, on
 * the same monotonic clock, and the three headers it answers with. No options, no checks, no
 * other store: what a limiter that sets these headers pays beyond the floor at least.
 */
function leastLimiter(delta) {
  const windows = new Map()
  const origin = performance.timeOrigin
  return function decide(address) {
    const now = Math.floor(origin + performance.now())
    const start = now - (now % WINDOW_MS)
    let state = windows.get(address)
    if (state === undefined) {
      state = { start, previous: 0, current: 0 }
      windows.set(address, state)
    }
    if (state.start !== start) {
      state.previous = state.start === start - WINDOW_MS ? state.current : 0
      state.current = 0
      state.start = start
    }
    const weight = (start + WINDOW_MS - now) / WINDOW_MS
    const used = Math.floor(state.previous * weight) + state.current
    if (used < LIMIT) state.current++
    const reset = Math.ceil((start + WINDOW_MS - now) / 1000)
    return [String(LIMIT - used - 1), String(delta ? reset : Math.ceil(now / 1000) + reset)]
  }
}

/**
 * Sluice's memory store decided from a bare Fastify hook (the `store-hook` variant, instruction
 * counts only): the client address, the store's decision of the default policy on the limiter's
 * clock, the decision on the request and the three headers, with none of the HTTP pipeline (no
 * options, checks, key bound, proxy warning or verdict). What a path of Fastify's own would cost
 * at least on this store.
 */
function storeHook() {
  const { MemoryStore, createLimiter } = require('@sluice/core')
  const store = new MemoryStore()
  const limiter = createLimiter({ store, limit: LIMIT, window: WINDOW_MS })
  const policy = limiter.policies[0]
  const clock = limiter.clock
  const limitText = String(LIMIT)
  let lastAddress = ''
  let lastKey = ''
  return (request, reply, done) => {
    const address = request.ip
    if (address !== lastAddress) {
      lastAddress = address
      lastKey = `sluice:${address}`
    }
    const decision = store.consumeOneNow(lastKey, policy, 1, clock(), 0)
    request.rateLimit = decision
    reply.header('x-ratelimit-limit', limitText)
    reply.header('x-ratelimit-remaining', String(decision.remaining))
    reply.header('x-ratelimit-reset', String(Math.ceil(decision.resetMs / 1000)))
    done()
  }
}

function redis() {
  const Redis = require('ioredis')
  return new Redis({ port: Number(redisPort), host: '127.0.0.1', enableOfflineQueue: true })
}

function sluiceOptions() {
  const options = { limit: LIMIT, window: WINDOW_MS }
  if (kind === 'sluice-redis') {
    const { RedisStore } = require('@sluice/redis')
    options.store = new RedisStore({ client: redis() })
  }
  return options
}

function express() {
  const app = require('express')()
  if (kind.startsWith('sluice')) app.use(require('@sluice/express').rateLimit(sluiceOptions()))
  if (kind.startsWith('peer')) {
    const { rateLimit } = require('express-rate-limit')
    const options = {
      windowMs: WINDOW_MS,
      limit: LIMIT,
      standardHeaders: 'draft-8',
      legacyHeaders: true,
    }
    if (kind === 'peer-redis') {
      const { RedisStore } = require('rate-limit-redis')
      const client = redis()
      options.store = new RedisStore({
        sendCommand: (command, ...args) => client.call(command, ...args),
      })
    }
    app.use(rateLimit(options))
  }
  if (kind === 'floor' && reject) {
    app.use((_req, res) => {
      const { headers, body } = floorRejection(false, false)
      for (const [name, value] of headers) res.setHeader(name, value)
      res.status(429).type('application/json; charset=utf-8').send(body)
    })
  }
  if (kind === 'least') {
    const decide = leastLimiter(false)
    app.use((req, res, next) => {
      const [remaining, reset] = decide(req.socket.remoteAddress)
      res.setHeader('X-RateLimit-Limit', String(LIMIT))
      res.setHeader('X-RateLimit-Remaining', remaining)
      res.setHeader('X-RateLimit-Reset', reset)
      next()
    })
  }
  if (kind === 'floor' && !reject) {
    app.use((_req, res, next) => {
      const [limit, remaining, reset] = floorValues(false)
      res.setHeader('X-RateLimit-Limit', limit)
      res.setHeader('X-RateLimit-Remaining', remaining)
      res.setHeader('X-RateLimit-Reset', reset)
      next()
    })
  }
  app.get('/', (_req, res) => res.send('hello'))
  collectBeforeLoad()
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server.address().port))
  })
}

async function fastify() {
  const app = require('fastify')({ logger: false })
  if (kind.startsWith('sluice'))
    await app.register(require('@sluice/fastify').default, sluiceOptions())
  if (kind.startsWith('peer')) {
    const options = { max: LIMIT, timeWindow: WINDOW_MS }
    if (kind === 'peer-redis') options.redis = redis()
    await app.register(require('@fastify/rate-limit'), options)
  }
  // Both limiter plugins must be registered (awaited) before the routes they cover; the
  // no-limiter server is built the same way, with an empty plugin (see docs/benchmarks.md).
  const bare = kind === 'none' || kind === 'floor' || kind === 'least' || kind === 'store-hook'
  if (bare) await app.register(async () => {})
  if (kind === 'store-hook') {
    app.decorateRequest('rateLimit', undefined)
    app.addHook('onRequest', storeHook())
  }
  if (kind === 'floor' && reject) {
    app.addHook('onRequest', (_request, reply) => {
      const { headers, body } = floorRejection(true, true)
      for (const [name, value] of headers) reply.header(name.toLowerCase(), value)
      reply.code(429).type('application/json; charset=utf-8').send(body)
    })
  }
  if (kind === 'least') {
    const decide = leastLimiter(true)
    app.addHook('onRequest', (request, reply, done) => {
      const [remaining, reset] = decide(request.raw.socket.remoteAddress)
      reply.header('x-ratelimit-limit', String(LIMIT))
      reply.header('x-ratelimit-remaining', remaining)
      reply.header('x-ratelimit-reset', reset)
      done()
    })
  }
  if (kind === 'floor' && !reject) {
    app.addHook('onRequest', (_request, reply, done) => {
      const [limit, remaining, reset] = floorValues(true)
      reply.header('x-ratelimit-limit', limit)
      reply.header('x-ratelimit-remaining', remaining)
      reply.header('x-ratelimit-reset', reset)
      done()
    })
  }
  app.get('/', async () => 'hello')
  collectBeforeLoad()
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app.server.address().port
}

function koa() {
  const Koa = require('koa')
  const app = new Koa()
  if (kind.startsWith('sluice')) app.use(require('@sluice/koa').rateLimit(sluiceOptions()))
  if (kind.startsWith('peer')) {
    const ratelimit = require('koa-ratelimit')
    app.use(
      ratelimit({
        driver: kind === 'peer-redis' ? 'redis' : 'memory',
        db: kind === 'peer-redis' ? redis() : new Map(),
        duration: WINDOW_MS,
        max: LIMIT,
        id: (ctx) => ctx.ip,
      }),
    )
  }
  if (kind === 'floor' && reject) {
    app.use((ctx) => {
      const { headers, body } = floorRejection(false, false)
      for (const [name, value] of headers) ctx.set(name, value)
      ctx.status = 429
      ctx.set('Content-Type', 'application/json; charset=utf-8')
      ctx.body = body
    })
  }
  if (kind === 'least') {
    const decide = leastLimiter(false)
    app.use((ctx, next) => {
      const [remaining, reset] = decide(ctx.req.socket.remoteAddress)
      ctx.set('X-RateLimit-Limit', String(LIMIT))
      ctx.set('X-RateLimit-Remaining', remaining)
      ctx.set('X-RateLimit-Reset', reset)
      return next()
    })
  }
  if (kind === 'floor' && !reject) {
    app.use((ctx, next) => {
      const [limit, remaining, reset] = floorValues(false)
      ctx.set('X-RateLimit-Limit', limit)
      ctx.set('X-RateLimit-Remaining', remaining)
      ctx.set('X-RateLimit-Reset', reset)
      return next()
    })
  }
  app.use((ctx) => {
    ctx.body = 'hello'
  })
  collectBeforeLoad()
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server.address().port))
  })
}

/** Nest on Express or Fastify (./nest.js): its variants are ThrottlerModule's. */
function nest(platform) {
  const { startNest } = require('./nest')
  const options = { limit: LIMIT, windowMs: WINDOW_MS, collect: collectBeforeLoad }
  return () => startNest(platform, kind, reject, options)
}

const start = {
  express,
  fastify,
  koa,
  'nest-express': nest('express'),
  'nest-fastify': nest('fastify'),
}[framework]
Promise.resolve(start()).then(
  (port) => console.log(`ready ${port}`),
  (error) => {
    console.error(error)
    process.exit(1)
  },
)
