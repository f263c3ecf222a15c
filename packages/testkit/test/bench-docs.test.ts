import { execFile } from 'node:child_process'
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'

// The pictures and charts in docs/ and the results section of docs/benchmarks.md are drawn by
// bench/pictures.js and bench/charts.js (from the simulator and from docs/bench/*.json). Each
// is drawn again here into a scratch folder and must equal the committed file: a change to the
// simulator, the charts or a result file that was not redrawn fails here. Runs the built
// packages, as the scripts do (npm test builds first).

const ROOT = resolve(__dirname, '../../..')
const run = promisify(execFile)

let scratch: string
beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), 'sluice-bench-docs-'))
})
afterEach(() => {
  rmSync(scratch, { recursive: true, force: true })
})

function script(name: string, env: Record<string, string>, args: string[] = []) {
  return run(process.execPath, [join(ROOT, 'bench', name), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  })
}

const committed = (path: string): string => readFileSync(join(ROOT, path), 'utf8')

test("the algorithm pictures in docs/img are the simulator's current drawings", async () => {
  await script('pictures.js', { BENCH_IMG_DIR: scratch })
  const drawn = readdirSync(scratch)
  expect(drawn.sort()).toEqual(
    ['fixed-window', 'gcra', 'leaky-bucket', 'sliding-log', 'sliding-window', 'token-bucket'].map(
      (a) => `${a}.svg`,
    ),
  )
  for (const file of drawn) {
    expect(readFileSync(join(scratch, file), 'utf8')).toBe(committed(`docs/img/${file}`))
  }
})

test('the benchmark charts and the results section match docs/bench/*.json', async () => {
  const docs = join(scratch, 'benchmarks.md')
  copyFileSync(join(ROOT, 'docs/benchmarks.md'), docs)
  await script('charts.js', { BENCH_IMG_DIR: scratch, BENCH_DOCS_FILE: docs })
  for (const part of ['http', 'instructions', 'core', 'redis', 'memcached', 'accuracy']) {
    expect(readFileSync(join(scratch, `bench-${part}.svg`), 'utf8')).toBe(
      committed(`docs/img/bench-${part}.svg`),
    )
  }
  // Rewritten from the JSON, the page is unchanged: the section says what the files hold.
  expect(readFileSync(docs, 'utf8')).toBe(committed('docs/benchmarks.md'))
  const section = committed('docs/benchmarks.md').split('<!-- results:begin -->')[1]
  expect(section).toContain('**HTTP** (')
  expect(section).toContain('- Fastify: Sluice memory costs ')
  expect(section).toContain('**Instructions per HTTP request** (')
  expect(section).toContain('- Koa: Sluice memory adds ')
})

test('a malformed result file is named with its bad field, and the others are still drawn', async () => {
  const results = join(scratch, 'results')
  const images = join(scratch, 'img')
  mkdirSync(results)
  for (const part of ['core', 'accuracy']) {
    copyFileSync(join(ROOT, `docs/bench/${part}.json`), join(results, `${part}.json`))
  }
  const core = JSON.parse(readFileSync(join(results, 'core.json'), 'utf8'))
  core.data.rows[1].hot = 'fast'
  writeFileSync(join(results, 'core.json'), JSON.stringify(core))
  const docs = join(scratch, 'benchmarks.md')
  copyFileSync(join(ROOT, 'docs/benchmarks.md'), docs)

  const failed = await script(
    'charts.js',
    { BENCH_RESULTS_DIR: results, BENCH_IMG_DIR: images, BENCH_DOCS_FILE: docs },
    ['core', 'accuracy'],
  ).then(
    () => undefined,
    (error: { code: number; stderr: string }) => error,
  )
  expect(failed?.code).toBe(1)
  expect(failed?.stderr).toContain('core.json: data.rows[1].hot must be a finite number >= 0')
  expect(readdirSync(images)).toEqual(['bench-accuracy.svg'])
  // The section keeps the valid parts and says which have no valid result.
  const page = readFileSync(docs, 'utf8')
  expect(page).toContain(
    '**In-process decisions and memory**: no valid result (run `npm run bench:core`).',
  )
  expect(page).toContain('**HTTP**: no valid result (run `npm run bench:http`).')
  expect(page).toMatch(/\*\*Accuracy\*\* \(\d{4}-\d\d-\d\d on /)
})

test("the HTTP results quote each framework's Sluice-to-peer ratio when the run recorded it", async () => {
  const results = join(scratch, 'results')
  mkdirSync(results)
  const http = JSON.parse(committed('docs/bench/http.json'))
  http.data.frameworks.fastify.versusPeer = { redis: 1.234, redisReject: 1.5 }
  // A file from before runs recorded the ratio: the section gives the two medians instead.
  delete http.data.frameworks.koa.versusPeer
  writeFileSync(join(results, 'http.json'), JSON.stringify(http))
  const docs = join(scratch, 'benchmarks.md')
  copyFileSync(join(ROOT, 'docs/benchmarks.md'), docs)
  const env = { BENCH_RESULTS_DIR: results, BENCH_IMG_DIR: scratch, BENCH_DOCS_FILE: docs }

  await script('charts.js', env, ['http'])
  const page = readFileSync(docs, 'utf8')
  expect(page).toMatch(
    /- Fastify: .* req\/s against .* \(1\.23x, the median of each round's ratio\)\./,
  )
  expect(page).toMatch(/- Koa: .* req\/s against \S+ \(medians\)\./)

  http.data.frameworks.fastify.versusPeer = { redis: 'fast' }
  writeFileSync(join(results, 'http.json'), JSON.stringify(http))
  await expect(script('charts.js', env, ['http'])).rejects.toMatchObject({
    code: 1,
    stderr: expect.stringContaining(
      'http.json: data.frameworks.fastify.versusPeer.redis must be a finite number >= 0',
    ),
  })
})
