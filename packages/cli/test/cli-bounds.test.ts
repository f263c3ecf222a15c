import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { ConfigError } from '@sluice/core'
import { makeTrace, renderSvg, simulate } from '@sluice/cli'

const CLI = resolve(__dirname, '../dist/cli.js')

/** Runs the built `sluice` on a 256 MB heap, killed after 20 s: a hang or a crash fails. */
async function sluice(
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--max-old-space-size=256', CLI, ...args],
      { timeout: 20_000, maxBuffer: 64 * 1024 * 1024 },
    )
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as {
      code: number | null
      signal: string | null
      stdout: string
      stderr: string
    }
    return { code: failed.code ?? -1, stdout: failed.stdout, stderr: failed.stderr }
  }
}

/** The first line of stderr: the message, before the usage. */
const firstLine = (text: string) => text.split('\n')[0]

/** Runs `sluice` and expects a usage refusal (exit 2) whose message is `message`. */
async function expectRefused(args: string[], message: string): Promise<void> {
  const { code, stderr } = await sluice(...args)
  expect([code, firstLine(stderr)]).toEqual([2, message])
}

describe('sluice simulate is bounded for any arguments', () => {
  const GCRA = ['simulate', '--algorithm', 'gcra', '--out', '/dev/null']

  test.each([
    [
      ['--limit', '60000', '--window', '1m'],
      "the 'bursty' trace of `limit` 60000 over `windows` 8",
    ],
    [
      ['--limit', '1e12', '--window', '31d'],
      "the 'bursty' trace of `limit` 1000000000000 over `windows` 8",
    ],
    [
      ['--limit', '1e9', '--window', '1s', '--trace', 'steady'],
      "the 'steady' trace of `limit` 1000000000 over `windows` 8",
    ],
    [
      ['--limit', '5', '--window', '1s', '--windows', '1e8'],
      "the 'bursty' trace of `limit` 5 over `windows` 100000000",
    ],
  ])('%j: refused (exit 2) with the bound in the message', async (args, start) => {
    const { code, stderr } = await sluice(...GCRA, ...args)
    expect(code).toBe(2)
    expect(firstLine(stderr)).toBe(
      `${start} has more than 250000 requests, the most a simulation replays: lower \`limit\` or \`windows\``,
    )
  })

  test('a trace at the bound runs: 250,000 requests in two bursts of 125,000', async () => {
    const args = ['--limit', '125000', '--window', '1m', '--trace', 'edge', '--windows', '2']
    const { code, stderr } = await sluice(...GCRA, ...args)
    expect(stderr).toMatch(/^\d+ of 250000 requests admitted; wrote \/dev\/null\n$/)
    expect(code).toBe(0)
  }, 30_000)

  test('state past 4 Mi numbers, a picture over 10,000 px: refused with the bound', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-bounds-'))
    try {
      const trace = join(dir, 'trace.json')
      writeFileSync(trace, JSON.stringify([{ at: 0 }]))
      const log = await sluice(
        ...['simulate', '--algorithm', 'sliding-log', '--limit', '1e9', '--window', '1s'],
        ...['--trace', trace, '--out', '/dev/null'],
      )
      expect(log.code).toBe(2)
      expect(firstLine(log.stderr)).toBe(
        'the limits keep 1000000003 numbers of state per key (sliding-log one per unit of `limit`, sliding-window one per sub-window of `precision`); a simulation keeps at most 4194304: lower `limit` or `precision`',
      )
      await expectRefused(
        [...GCRA, '--limit', '5', '--window', '1s', '--width', '1e9'],
        '`width` must be at most 10000 (px); got 1000000000',
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a bad flag is named as given; a trace file may begin with a byte-order mark', async () => {
    await expectRefused(
      [...GCRA, '--limit', '5', '--window', '100000000000000000000'],
      '`window` must be at most 2^50 ms; got 100000000000000000000',
    )
    await expectRefused(
      [...GCRA, '--limit', '5', '--window', '1s', '--seed', '1.5'],
      '`--seed` must be a whole number; got "1.5"',
    )
    const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-bom-'))
    try {
      const file = join(dir, 'trace.json')
      writeFileSync(file, `\uFEFF${JSON.stringify([{ at: 0 }, { at: 10 }, { at: 20 }])}`)
      const marked = await sluice(...GCRA, '--limit', '5', '--window', '1s', '--trace', file)
      expect([marked.code, marked.stderr]).toEqual([
        0,
        '3 of 3 requests admitted; wrote /dev/null\n',
      ])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('--trace reads only a regular JSON file, and never prints its content', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-bounds-'))
    try {
      const secret = join(dir, 'shadow')
      writeFileSync(secret, 'root:$6$secret-hash:20228:0:99999:7:::\n')
      const base = [...GCRA, '--limit', '5', '--window', '1s', '--trace']
      const device = await sluice(...base, '/dev/zero')
      expect(device.code).toBe(2)
      expect(firstLine(device.stderr)).toBe(
        '`--trace` must be one of bursty, steady, edge or a JSON file of requests; /dev/zero cannot be read (not a regular file)',
      )
      const text = await sluice(...base, secret)
      expect(text.code).toBe(2)
      expect(firstLine(text.stderr)).toBe(
        `\`--trace\` must be one of bursty, steady, edge or a JSON file of requests; ${secret} is not JSON`,
      )
      expect(text.stderr).not.toContain('secret-hash')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('sluice check-rules reads only regular rules files and echoes none of their content', () => {
  test('/dev/zero is refused at once; a directory too', async () => {
    expect(await sluice('check-rules', '/dev/zero')).toEqual({
      code: 1,
      stdout: '',
      stderr: '/dev/zero: cannot be read (not a regular file)\n',
    })
    expect((await sluice('check-rules', tmpdir())).stderr).toBe(
      `${tmpdir()}: cannot be read (not a regular file)\n`,
    )
  })

  test('a file of colon-separated lines is no rules file, and its lines are not printed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-bounds-'))
    try {
      const file = join(dir, 'shadow')
      const lines = Array.from(
        { length: 12 },
        (_, i) => `user${i}:$6$secret-hash-${i}:20228:0:99999:7:::`,
      )
      writeFileSync(file, `${lines.join('\n')}\n`)
      expect(await sluice('check-rules', file)).toEqual({
        code: 1,
        stdout: '',
        stderr: `${file}:1: not a rules file: the rules must be a mapping with \`domain\` and \`descriptors\`; got a mapping of 12 keys\n`,
      })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('the simulator API holds the same bounds', () => {
  test('simulate refuses a trace of more than 250,000 requests and state past 4 Mi numbers', () => {
    const trace = Array.from({ length: 250_001 }, () => ({ at: 0 }))
    expect(() => simulate(trace, { limit: 5, window: 1000 })).toThrow(
      new ConfigError('`trace` must have at most 250000 requests; got 250001'),
    )
    // 2,100,003 numbers per key: one key fits, two do not.
    const keys = [
      { at: 0, key: 'a' },
      { at: 0, key: 'b' },
    ]
    expect(() =>
      simulate(keys.slice(0, 1), { algorithm: 'sliding-log', limit: 2_100_000, window: 1000 }),
    ).not.toThrow()
    expect(() =>
      simulate(keys, { algorithm: 'sliding-log', limit: 2_100_000, window: 1000 }),
    ).toThrow(
      "the trace's first 2 keys need 4200006 numbers of state (2100003 per key); a simulation keeps at most 4194304: use fewer keys or a lower `limit`",
    )
  })

  test('makeTrace stops at the bound; renderSvg refuses a picture over 10,000 px', () => {
    expect(() => makeTrace('steady', { limit: 1e9, windowMs: 1000 })).toThrow(ConfigError)
    expect(makeTrace('steady', { limit: 20_000, windowMs: 1000 })).toHaveLength(240_000)
    const result = simulate([{ at: 0 }], { limit: 5, window: 1000 })
    expect(() => renderSvg(result, { height: 10_001 })).toThrow(
      new ConfigError('`height` must be at most 10000 (px); got 10001'),
    )
  })
})
