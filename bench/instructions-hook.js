'use strict'
// Instructions per call of @sluice/fastify's hook alone (limit 1e9 an hour, the memory store),
// handed one request and reply of its own making, as a connection's requests come: no HTTP, no
// Fastify around it, so a change of a hundred instructions in the hook shows. Counted by
// valgrind's callgrind over two fresh processes with the same warm-up and
// BENCH_INSTR_HOOK_CALLS or twice as many counted calls; the difference over the difference of
// calls is one call. `none` is the same loop calling a hook that only calls `done`.
// Run: node bench/instructions-hook.js (after npm run build). Prints the figures.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { childOrMain, countedPerOperation, envCount } = require('./lib')

const CALLS = envCount('BENCH_INSTR_HOOK_CALLS', 100_000)
const WARM = 200_000

/** The plugin's onRequest hook for GET /, taken from the route Fastify builds. */
async function sluiceHook() {
  const Fastify = require('fastify')
  const rateLimit = require('@sluice/fastify').default
  const app = Fastify()
  await app.register(rateLimit, { limit: 1e9, window: '1h' })
  let hook
  // Registered after the plugin's: it sees the route with Sluice's hook first in line.
  app.addHook('onRoute', (route) => {
    hook = Array.isArray(route.onRequest) ? route.onRequest[0] : route.onRequest
  })
  app.get('/', async () => 'hello')
  await app.ready()
  return { app, hook }
}

/** In the child: warm up, then `calls` calls of the hook (or of `done` alone, `none`). */
async function child(kind, calls) {
  const { app, hook } = await sluiceHook()
  const socket = { remoteAddress: '127.0.0.1' }
  const raw = { socket, headers: {}, once() {}, on() {} }
  const written = {}
  const reply = {
    raw: { once() {}, on() {} },
    header(name, value) {
      written[name] = value
      return this
    },
  }
  const request = { raw, headers: {}, server: app, ip: socket.remoteAddress }
  let passed = 0
  const done = () => void passed++
  const call = kind === 'none' ? (_q, _r, next) => next() : hook
  for (let i = 0; i < WARM + calls; i++) call(request, reply, done)
  if (passed !== WARM + calls) throw new Error(`${passed} of ${WARM + calls} calls passed`)
}

function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-instr-hook-'))
  try {
    for (const kind of ['none', 'sluice']) {
      const perCall = countedPerOperation(__filename, kind, CALLS, dir)
      console.log(`${kind}: ${Math.round(perCall)} instructions per hook call`)
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

childOrMain(child, main)
