/**
 * @sluice/core/web, @sluice/http, @sluice/fetch and @sluice/hono type-check in a project with no
 * Node types: a real `tsc` over a small Workers-style project (`"types": []`,
 * `skipLibCheck: false`) whose node_modules holds only the built @sluice packages, hono and
 * ipaddr.js (@sluice/http's one dependency), so neither @types/node, prom-client, yaml nor zod
 * can be resolved. Uses dist: run `npm run build` first.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const root = resolve(__dirname, '../../..')

const app = `
import { rateLimit, ipKey, combineKeys } from '@sluice/fetch'
import { rateLimiter } from '@sluice/hono'
import { Hono } from 'hono'
import { createLimiter, MemoryStore, type Decision } from '@sluice/core/web'
import { createHttpLimiter, headerKey, type RuleSet } from '@sluice/http'

const kernel = createLimiter({ limit: 5, window: '1s', store: new MemoryStore() })
export const decided: Promise<Decision> = kernel.consume('user:1')
export const pipeline = (rules: RuleSet) =>
  createHttpLimiter({ rules, descriptors: () => [] }, { framework: 'Workers', resetStyle: 'epoch' })
export const byKey = headerKey('x-api-key')

const limited = rateLimit({
  limit: 10,
  window: '1m',
  ip: (request) => request.headers.get('cf-connecting-ip'),
  key: combineKeys(ipKey((request) => request.headers.get('cf-connecting-ip'))),
  trustProxy: false,
  onMissingAddress: 'skip',
})

type AppEnv = { Variables: { user: string } }
const app = new Hono<AppEnv>()
app.use(rateLimiter<AppEnv>({ limit: 10, window: '1m', key: (c) => c.get('user') }))
app.get('/', (c) => c.text('ok'))

export default {
  fetch(request: Request): Promise<Response> {
    return limited(request, () => app.fetch(request))
  },
}
`

function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-web-types-'))
  for (const name of ['core', 'http', 'fetch', 'hono']) {
    const target = join(dir, 'node_modules/@sluice', name)
    mkdirSync(target, { recursive: true })
    cpSync(join(root, 'packages', name, 'package.json'), join(target, 'package.json'))
    cpSync(join(root, 'packages', name, 'dist'), join(target, 'dist'), { recursive: true })
  }
  for (const name of ['hono', 'ipaddr.js']) {
    symlinkSync(join(root, 'node_modules', name), join(dir, 'node_modules', name))
  }
  writeFileSync(join(dir, 'worker.ts'), app)
  const compilerOptions = {
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'Bundler',
    lib: ['ES2022', 'WebWorker'],
    types: [],
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    // Keeps resolution inside this folder: a symlink's real path would reach the repo's node_modules.
    preserveSymlinks: true,
  }
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions, files: ['worker.ts'] }),
  )
  return dir
}

test('a project without @types/node, prom-client, yaml or zod type-checks the kernel web entry, @sluice/http, @sluice/fetch and @sluice/hono', () => {
  const dir = project()
  try {
    const tsc = join(root, 'node_modules/typescript/bin/tsc')
    const result = spawnSync(process.execPath, [tsc, '-p', dir, '--listFiles'], {
      encoding: 'utf8',
    })
    const errors = result.stdout.split('\n').filter((line) => line.includes('error TS'))
    expect(errors).toEqual([])
    expect(result.status).toBe(0)
    // The check did read the packages' declarations, and nothing of Node's.
    const files = result.stdout.split('\n')
    expect(files.some((file) => file.endsWith('@sluice/core/dist/web.d.mts'))).toBe(true)
    expect(files.some((file) => file.endsWith('@sluice/hono/dist/index.d.mts'))).toBe(true)
    expect(files.some((file) => file.endsWith('@sluice/http/dist/index.d.mts'))).toBe(true)
    expect(files.filter((file) => /\/(yaml|zod|prom-client)\//.test(file))).toEqual([])
    expect(files.filter((file) => file.includes('@types/node'))).toEqual([])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 60_000)
