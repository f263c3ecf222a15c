// Several app processes (node:cluster workers sharing one port) and one Redis: the limit of
// 10 requests per minute per client holds across all of them. The primary fires 30 requests
// at the workers and prints which process answered what: 10 pass in total, however the
// requests were spread. Plain node:http and @sluice/core, so it runs without any adapter.
// Run: REDIS_URL=redis://127.0.0.1:6379 node examples/cluster/app.js
const cluster = require('node:cluster')
const http = require('node:http')
const { Redis } = require('ioredis')
const { createLimiter } = require('@sluice/core')
const { RedisStore } = require('@sluice/redis')

const WORKERS = Number(process.env.WORKERS) || 4
const PORT = Number(process.env.PORT) || 3001
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

function worker() {
  const client = new Redis(REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 })
  client.on('error', () => undefined)
  const limiter = createLimiter({
    store: new RedisStore({ client }),
    algorithm: 'gcra',
    limit: 10,
    window: '1m',
    onStoreError: 'deny',
  })
  const server = http.createServer(async (req, res) => {
    const key = req.headers['x-client'] ?? req.socket.remoteAddress
    const d = await limiter.consume(String(key))
    res.statusCode = d.allowed ? 200 : 429
    if (!d.allowed) res.setHeader('Retry-After', Math.ceil(d.retryAfterMs / 1000))
    res.setHeader('X-RateLimit-Remaining', d.remaining)
    res.end(JSON.stringify({ pid: process.pid, allowed: d.allowed, remaining: d.remaining }))
  })
  server.listen(PORT, () => process.send('listening'))
  process.on('message', (message) => {
    if (message === 'stop') server.close(() => client.quit().finally(() => process.exit(0)))
  })
}

function get(client) {
  return new Promise((resolve, reject) => {
    // A fresh connection per request (no keep-alive), so the primary spreads them over workers.
    const req = http.get({ port: PORT, headers: { 'x-client': client }, agent: false }, (res) => {
      let body = ''
      res.on('data', (chunk) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode, ...JSON.parse(body) }))
    })
    req.on('error', reject)
  })
}

async function primary() {
  const workers = Array.from({ length: WORKERS }, () => cluster.fork())
  await Promise.all(workers.map((w) => new Promise((resolve) => w.once('message', resolve))))
  const client = `demo-${Date.now()}`
  const results = await Promise.all(Array.from({ length: 30 }, () => get(client)))
  const byPid = {}
  for (const r of results) {
    byPid[r.pid] ??= { answered: 0, passed: 0 }
    byPid[r.pid].answered++
    if (r.status === 200) byPid[r.pid].passed++
  }
  console.table(byPid)
  const passed = results.filter((r) => r.status === 200).length
  console.log(`${passed} of 30 passed across ${Object.keys(byPid).length} processes (limit 10)`)
  for (const w of workers) w.send('stop')
  process.exitCode = passed === 10 ? 0 : 1
}

if (cluster.isPrimary) primary()
else worker()
