/**
 * @sluice/fetch with the memory store where only web APIs exist: its built files (and
 * @sluice/core's, by the `import` condition, not `node`) are bundled by esbuild for a neutral
 * platform, where any Node built-in fails the build, then run in a node:vm context holding web
 * globals only (no process, Buffer, require). Uses dist: run `npm run build` first.
 */
import { runInNewContext } from 'node:vm'
import { build } from 'esbuild'

const entry = `
import { rateLimit } from '@sluice/fetch'
// Created in global scope, as Workers apps do: no timer, no random value until a request.
const limited = rateLimit({ limit: 1, window: '1m', algorithm: 'fixed-window', ip: (r) => r.headers.get('cf-connecting-ip') })
export async function run() {
  const ask = (ip) => limited(new Request('https://worker.test/', { headers: { 'cf-connecting-ip': ip } }), () => new Response('ok'))
  const answers = []
  for (const ip of ['203.0.113.1', '203.0.113.1', '203.0.113.2']) {
    const response = await ask(ip)
    answers.push([response.status, response.headers.get('x-ratelimit-remaining'), await response.text()])
  }
  // A key past 256 bytes is hashed (sha256) without node:crypto.
  const byToken = rateLimit({ limit: 1, window: '1m', key: (r) => r.headers.get('x-api-key') })
  const token = (t) => new Request('https://worker.test/', { headers: { 'x-api-key': t } })
  const long = 'k'.repeat(300)
  answers.push((await byToken(token(long), () => new Response('ok'))).status)
  answers.push((await byToken(token(long), () => new Response('ok'))).status)
  // No address: through unlimited, one warning (onMissingAddress: 'skip').
  const warnings = []
  const bare = rateLimit({ logger: { warn: (message) => warnings.push(message.split('\\n')[0]) } })
  for (let i = 0; i < 2; i++) answers.push((await bare(new Request('https://worker.test/'), () => new Response('ok'))).status)
  answers.push(warnings)
  return answers
}
`

/**
 * The globals a Worker-like runtime has: web APIs, no Node ones; as on Cloudflare Workers,
 * timers and random values throw in global scope (until `inRequest` is set).
 */
function webGlobals() {
  const state = { inRequest: false }
  const inRequestOnly =
    <A extends unknown[], R>(fn: (...args: A) => R) =>
    (...args: A): R => {
      if (!state.inRequest) throw new Error('Disallowed operation called within global scope')
      return fn(...args)
    }
  return {
    state,
    Request,
    Response,
    Headers,
    URL,
    AbortController,
    AbortSignal,
    TextEncoder,
    TextDecoder,
    // WinterCG's minimum common API (Workers, Deno, Bun) has btoa and atob.
    btoa,
    atob,
    crypto: {
      getRandomValues: inRequestOnly(<T extends ArrayBufferView>(array: T) =>
        globalThis.crypto.getRandomValues(array as never),
      ),
    },
    performance: { now: () => performance.now() },
    // Web timers answer numbers, not Node's Timeout objects (no unref).
    setTimeout: inRequestOnly((fn: () => void, ms: number) => Number(setTimeout(fn, ms))),
    clearTimeout: (id: number) => clearTimeout(id),
    setInterval: inRequestOnly((fn: () => void, ms: number) => {
      const timer = setInterval(fn, ms)
      timer.unref()
      return Number(timer)
    }),
    clearInterval: (id: number) => clearInterval(id),
    queueMicrotask,
    console,
  }
}

test('the bundle has no Node built-in and decides requests with only web globals', async () => {
  const result = await build({
    stdin: { contents: entry, resolveDir: __dirname, loader: 'js' },
    bundle: true,
    platform: 'neutral',
    mainFields: ['module', 'main'],
    format: 'iife',
    globalName: 'sluiceBundle',
    write: false,
    logLevel: 'silent',
  })
  const code = result.outputFiles[0].text
  expect(code).not.toMatch(/require\("(node:)?(crypto|http|perf_hooks|fs|module|path|url)"\)/)
  const globals = webGlobals()
  const context = globals as Record<string, unknown>
  runInNewContext(code, context)
  globals.state.inRequest = true
  expect(context.process).toBeUndefined()
  expect(context.Buffer).toBeUndefined()
  const run = (context.sluiceBundle as { run: () => Promise<unknown[]> }).run
  expect(await run()).toEqual([
    [200, '0', 'ok'],
    [429, '0', expect.stringContaining('"error":"Too Many Requests"')],
    [200, '0', 'ok'],
    200,
    429,
    200,
    200,
    [
      '[sluice] Fetch rateLimit: a request has no client address, and without one every such client would share one bucket. Give the address or a key:',
    ],
  ])
})

test('the bundle fails when a Node built-in is reached (the check can fail)', async () => {
  await expect(
    build({
      stdin: { contents: "import 'node:crypto'", resolveDir: __dirname, loader: 'js' },
      bundle: true,
      platform: 'neutral',
      write: false,
      logLevel: 'silent',
    }),
  ).rejects.toThrow(/Could not resolve "node:crypto"/)
})
