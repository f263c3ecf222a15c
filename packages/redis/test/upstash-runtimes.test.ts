import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort, upstashUnderTest, type UpstashUnderTest } from '@sluice/testkit'

// The Deno and Bun examples (examples/deno, examples/bun: @sluice/fetch, RedisStore on
// @upstash/redis) in the real runtimes, installed from npm (root devDependencies `deno`, `bun`),
// through the REST gateway to a real redis-server. They load the built packages: run
// `npm run build` first (npm test does).
const ROOT = join(__dirname, '../../..')
const BIN = join(ROOT, 'node_modules/.bin')
const run = promisify(execFile)

// A server each: both examples count the same client address.
let upstash: UpstashUnderTest
const children: ChildProcess[] = []

beforeEach(async () => {
  upstash = await upstashUnderTest()
})

afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL')
  await upstash.close()
})

/** Starts `command` with the gateway's credentials on a free port; resolves once it listens. */
async function serve(command: string, args: string[]): Promise<number> {
  const port = await freePort()
  const child = spawn(join(BIN, command), args, {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      UPSTASH_REDIS_REST_URL: upstash.gateway.url,
      UPSTASH_REDIS_REST_TOKEN: upstash.gateway.token,
      NO_COLOR: '1',
    },
  })
  children.push(child)
  let output = ''
  await new Promise<void>((resolve, reject) => {
    const seen = (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes(`Listening on http://127.0.0.1:${port}`)) resolve()
    }
    child.stdout?.on('data', seen)
    child.stderr?.on('data', seen)
    child.once('exit', (code) => reject(new Error(`${command} exited (${code}): ${output}`)))
  })
  return port
}

async function statuses(port: number, n: number): Promise<number[]> {
  const sent = Array.from({ length: n }, () => fetch(`http://127.0.0.1:${port}/`))
  return Promise.all(
    sent.map(async (pending) => {
      const response = await pending
      await response.text()
      return response.status
    }),
  )
}

const tally = (list: number[]) => [200, 429].map((s) => list.filter((x) => x === s).length)

test('Deno: the example type-checks, and admits exactly 20 of 25 from one address', async () => {
  await run(join(BIN, 'deno'), ['check', 'examples/deno/server.ts'], { cwd: ROOT })
  const port = await serve('deno', [
    'run',
    '--allow-net',
    '--allow-env',
    '--allow-read',
    '--allow-sys',
    'examples/deno/server.ts',
  ])
  expect(tally(await statuses(port, 25))).toEqual([20, 5])
}, 60_000)

test('Bun: the example admits exactly 20 of 25 from one address', async () => {
  const port = await serve('bun', ['examples/bun/server.ts'])
  expect(tally(await statuses(port, 25))).toEqual([20, 5])
}, 60_000)
