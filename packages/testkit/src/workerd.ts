/**
 * Owns running Workers code in the real workerd runtime through Miniflare: a Worker's entry
 * bundled by esbuild from the packages' sources for a neutral platform (a Node built-in fails
 * the build), as wrangler bundles it.
 */
import { dirname, join } from 'node:path'
import { build } from 'esbuild'

/** packages/, found from core's real path (this file may run bundled elsewhere: bench/edge.js). */
const PACKAGES = dirname(dirname(require.resolve('@sluice/core/package.json')))

/** `@sluice/<name>` (and `@sluice/core/web`) from the sources, as jest maps them. */
const sources = {
  name: 'sluice-sources',
  setup(plugin: {
    onResolve(
      options: { filter: RegExp },
      callback: (args: { path: string }) => { path: string } | undefined,
    ): void
  }): void {
    plugin.onResolve({ filter: /^@sluice\// }, ({ path }) => {
      if (path === '@sluice/core/web') return { path: join(PACKAGES, 'core/src/web.ts') }
      if (path === '@sluice/core/adapter') return { path: join(PACKAGES, 'core/src/adapter.ts') }
      const name = /^@sluice\/([a-z-]+)$/.exec(path)?.[1]
      return name === undefined ? undefined : { path: join(PACKAGES, name, 'src/index.ts') }
    })
  },
}

/**
 * The Worker module at `entry` (a .ts or .js file) as one ES module's text. `nodeCompat`: Node
 * built-ins (`node:*`) are left to the runtime, as wrangler does with the `nodejs_compat` flag.
 */
export async function bundleWorker(entry: string, nodeCompat = false): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'browser'],
    format: 'esm',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
    plugins: [sources],
    external: nodeCompat ? ['node:*'] : [],
  })
  return result.outputFiles[0].text
}

/** What a test calls on a Worker of a Miniflare (Miniflare's own types need workers-types). */
interface WorkerFetcher {
  fetch(
    url: string,
    init: { headers: Record<string, string> },
  ): Promise<{ status: number; text(): Promise<string> }>
}

/** A Miniflare's `getWorker`, as the tests use it. */
interface WorkerHost {
  getWorker(name: string): Promise<unknown>
}

/**
 * `n` requests at once to the Worker `worker`, all from the client address `ip` (as
 * Cloudflare's `cf-connecting-ip`); their statuses, once every body is read.
 */
export async function workerStatuses(
  mf: WorkerHost,
  worker: string,
  ip: string,
  n: number,
): Promise<number[]> {
  const edge = (await mf.getWorker(worker)) as WorkerFetcher
  const sent = Array.from({ length: n }, () =>
    edge.fetch('https://example.test/', { headers: { 'cf-connecting-ip': ip } }),
  )
  return Promise.all(
    sent.map(async (pending) => {
      const response = await pending
      await response.text()
      return response.status
    }),
  )
}

/**
 * Waits, when less than 20 s of the wall clock's minute is left, for the next minute. Code in
 * workerd reads the real clock, and a sliding window of a minute weighs the previous minute by
 * what is left of it: an exact count that ran across a minute's edge would see fewer of its
 * earlier requests. Tests that count a minute's limit exactly in workerd start with this.
 */
export async function wellInsideAMinute(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000)
  if (left < 20_000) await new Promise((resolve) => setTimeout(resolve, left + 100))
}
