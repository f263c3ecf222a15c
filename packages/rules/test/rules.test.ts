import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { ConfigError, createLimiter } from '@sluice/core'
import {
  formatRuleTable,
  loadRules,
  parseRules,
  RulesError,
  type MatchedRule,
  type RulesDocument,
} from '@sluice/rules'

const RULES = `
domain: api
descriptors:
  - key: route
    value: /login
    rate_limit: { unit: minute, requests_per_unit: 5 }
    descriptors:
      - key: user
        name: login-per-user
        rate_limit: { unit: minute, requests_per_unit: 2, algorithm: gcra, burst: 2 }
  - key: route
    rate_limit: { unit: second, requests_per_unit: 100 }
  - key: user
    rate_limit: { unit: second, requests_per_unit: 10 }
    shadow_mode: true
  - key: user
    value: admin
    unlimited: true
  - key: tenant
    descriptors:
      - key: plan
        value: free
        rate_limit: { unit: day, requests_per_unit: 1000, algorithm: fixed-window }
`

const summary = (matches: MatchedRule[]) =>
  matches.map((m) => `${m.rule.name} @ ${m.key}${m.shadow ? ' (shadow)' : ''}`)

describe('loadRules: parsing and matching', () => {
  const rules = parseRules(RULES, { source: 'rules.yaml' })

  test('every rule is compiled to a core Policy, named by `name` or by its Lyft-style path', () => {
    expect(rules.domain).toBe('api')
    expect(rules.source).toBe('rules.yaml')
    expect(rules.rules.map((r) => [r.name, r.path, r.policy?.id ?? 'unlimited', r.shadow])).toEqual(
      [
        ['api.route_/login', 'descriptors[0]', 'sw:5:60000', false],
        ['login-per-user', 'descriptors[0].descriptors[0]', 'gc:2:60000:2', false],
        ['api.route', 'descriptors[1]', 'sw:100:1000', false],
        ['api.user', 'descriptors[2]', 'sw:10:1000', true],
        ['api.user_admin', 'descriptors[3]', 'unlimited', false],
        ['api.tenant.plan_free', 'descriptors[4].descriptors[0]', 'fw:1000:86400000', false],
      ],
    )
    expect(rules.rules[1].policy?.name).toBe('login-per-user')
    expect(rules.rules[1].limit).toEqual({
      algorithm: 'gcra',
      limit: 2,
      window: '1m',
      burst: 2,
      name: 'login-per-user',
    })
  })

  test('a request matches several rules: per route, nested per route and user, and per user', () => {
    expect(
      summary(
        rules.match([
          ['route', '/login'],
          ['user', '42'],
        ]),
      ),
    ).toEqual([
      'api.route_/login @ api|route=/login',
      'login-per-user @ api|route=/login|user=42',
      'api.user @ api|user=42 (shadow)',
    ])
  })

  test('values that differ only in a lone half of a UTF-16 pair count apart, in well-formed keys', () => {
    const values = ['\uD800', '\uDBFF', '\uDC00', '\uFFFD', 'a\\uD800', '\uD83D\uDE00']
    const keys = values.map((value) => rules.match([['user', value]])[0].key)
    expect(new Set(keys).size).toBe(values.length)
    // Each one as UTF-8 holds, so a store that writes UTF-8 keeps them apart too.
    const written = keys.map((key) => Buffer.from(key, 'utf8').toString('utf8'))
    expect(written).toEqual(keys)
    expect(keys[0]).toBe('api|user=\\ud800')
    expect(keys[4]).toBe('api|user=a\\\\uD800')
  })

  test('the most specific descriptor wins: key and value over the key alone', () => {
    expect(summary(rules.match([['route', '/login']]))).toEqual([
      'api.route_/login @ api|route=/login',
    ])
    expect(summary(rules.match([['route', '/about']]))).toEqual(['api.route @ api|route=/about'])
  })

  test('a bare-key rule counts per value, across the entries before it', () => {
    const a = rules.match([
      ['route', '/about'],
      ['user', '7'],
    ])
    const b = rules.match([
      ['route', '/search'],
      ['user', '7'],
    ])
    expect(a[1].key).toBe('api|user=7')
    expect(b[1].key).toBe(a[1].key)
    expect(a[0].key).not.toBe(b[0].key)
  })

  test('nested descriptors match the entries that follow, in order, as Lyft does', () => {
    // Not adjacent: the nested per-user rule is not reached.
    expect(
      summary(
        rules.match([
          ['route', '/login'],
          ['method', 'POST'],
          ['user', '42'],
        ]),
      ),
    ).toEqual(['api.route_/login @ api|route=/login', 'api.user @ api|user=42 (shadow)'])
    // Reversed: the route comes after the user, so nothing nested matches either.
    expect(
      summary(
        rules.match([
          ['user', '42'],
          ['route', '/login'],
        ]),
      ),
    ).toEqual(['api.user @ api|user=42 (shadow)', 'api.route_/login @ api|route=/login'])
    // A path-only descriptor (tenant) limits nothing itself.
    expect(
      summary(
        rules.match([
          ['tenant', 'acme'],
          ['plan', 'free'],
        ]),
      ),
    ).toEqual(['api.tenant.plan_free @ api|tenant=acme|plan=free'])
    expect(
      rules.match([
        ['tenant', 'acme'],
        ['plan', 'pro'],
      ]),
    ).toEqual([])
    expect(rules.match([['plan', 'free']])).toEqual([])
  })

  test('unlimited exempts from the bare-key sibling and matches nothing', () => {
    expect(rules.match([['user', 'admin']])).toEqual([])
    expect(
      summary(
        rules.match([
          ['route', '/login'],
          ['user', 'admin'],
        ]),
      ),
    ).toEqual([
      'api.route_/login @ api|route=/login',
      'login-per-user @ api|route=/login|user=admin',
    ])
  })

  test('an entry without a value matches nothing and ends a nested walk', () => {
    expect(
      summary(
        rules.match([
          ['route', '/login'],
          ['user', undefined],
        ]),
      ),
    ).toEqual(['api.route_/login @ api|route=/login'])
    expect(rules.match([])).toEqual([])
    expect(rules.match([['unknown', 'x']])).toEqual([])
  })

  test('separators inside keys and values are escaped, so two requests never share a state key', () => {
    const doc: RulesDocument = {
      domain: 'a|b',
      descriptors: [{ key: 'k', rate_limit: { unit: 'second', requests_per_unit: 1 } }],
    }
    const set = loadRules(doc)
    expect(set.match([['k', 'x|k=y']])[0].key).toBe('a\\|b|k=x\\|k\\=y')
    expect(set.match([['k', 'x\\']])[0].key).toBe('a\\|b|k=x\\\\')
    expect(set.source).toBe('<rules object>')
  })

  test('the compiled set is immutable', () => {
    expect(Object.isFrozen(rules)).toBe(true)
    expect(Object.isFrozen(rules.rules)).toBe(true)
    expect(Object.isFrozen(rules.rules[0])).toBe(true)
    expect(Object.isFrozen(rules.rules[0].match)).toBe(true)
  })

  test('a matched rule drives a limiter: the per-user count holds across routes', async () => {
    const limiters = new Map<string, ReturnType<typeof createLimiter>>()
    const at = (m: MatchedRule) => {
      let limiter = limiters.get(m.policy.id)
      if (limiter === undefined) {
        limiter = createLimiter({ ...m.rule.limit!, clock: () => 0 })
        limiters.set(m.policy.id, limiter)
      }
      return limiter
    }
    const perUser = [] as boolean[]
    for (let i = 0; i < 3; i++) {
      const route = i % 2 === 0 ? '/a' : '/b'
      const [, user] = rules.match([
        ['route', route],
        ['user', 'u'],
      ])
      perUser.push((await at(user).consume(user.key)).allowed)
    }
    expect(perUser).toEqual([true, true, true]) // 10 per second: all three counted on one key
    const [, user] = rules.match([
      ['route', '/c'],
      ['user', 'u'],
    ])
    expect((await at(user).peek(user.key)).remaining).toBe(7)
  })

  test('JSON files load too', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-rules-'))
    try {
      const file = join(dir, 'rules.json')
      writeFileSync(
        file,
        JSON.stringify({
          domain: 'web',
          descriptors: [{ key: 'ip', rate_limit: { unit: 'hour', requests_per_unit: 3 } }],
        }),
      )
      const set = loadRules(file)
      expect(set.source).toBe(file)
      expect(summary(set.match([['ip', '1.2.3.4']]))).toEqual(['web.ip @ web|ip=1.2.3.4'])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('the rule table lists every rule with its limit, mode and state key', () => {
    expect(formatRuleTable(rules)).toBe(
      [
        'domain api (rules.yaml): 6 rules',
        'RULE                  MATCHES                LIMIT       ALGORITHM       BURST  MODE     STATE KEY',
        'api.route_/login      route=/login           5/minute    sliding-window  -      enforce  api|route=/login',
        'login-per-user        route=/login > user=*  2/minute    gcra            2      enforce  api|route=/login|user=<user>',
        'api.route             route=*                100/second  sliding-window  -      enforce  api|route=<route>',
        'api.user              user=*                 10/second   sliding-window  -      shadow   api|user=<user>',
        'api.user_admin        user=admin             unlimited   -               -      exempt   api|user=admin',
        'api.tenant.plan_free  tenant=* > plan=free   1000/day    fixed-window    -      enforce  api|tenant=<tenant>|plan=free',
      ].join('\n'),
    )
  })
})

/** The message a text fails with (as `rules.yaml`). */
function errorOf(text: string): string {
  try {
    parseRules(text, { source: 'rules.yaml' })
  } catch (error) {
    expect(error).toBeInstanceOf(RulesError)
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as RulesError).code).toBe('ERR_SLUICE_CONFIG')
    return (error as Error).message
  }
  throw new Error('expected the rules to be rejected')
}

const ok = 'rate_limit: { unit: second, requests_per_unit: 1 }'

describe('validation: each error names the file, the line, the path and what is wrong', () => {
  const cases: [string, string, string][] = [
    [
      'unit',
      `domain: api\ndescriptors:\n  - key: a\n    rate_limit: { unit: week, requests_per_unit: 1 }`,
      "rules.yaml:4: `descriptors[0].rate_limit.unit` must be one of 'second', 'minute', 'hour', 'day'; got \"week\"",
    ],
    [
      'requests_per_unit zero',
      `domain: api\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 0 }`,
      'rules.yaml:4: `descriptors[0].rate_limit.requests_per_unit` must be a positive integer; got 0',
    ],
    [
      'requests_per_unit fractional',
      `domain: api\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1.5 }`,
      'rules.yaml:4: `descriptors[0].rate_limit.requests_per_unit` must be a positive integer; got 1.5',
    ],
    [
      'requests_per_unit missing',
      `domain: api\ndescriptors:\n  - key: a\n    rate_limit: { unit: second }`,
      'rules.yaml:4: `descriptors[0].rate_limit.requests_per_unit` is missing (must be a positive integer)',
    ],
    [
      'algorithm',
      `domain: api\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1, algorithm: magic }`,
      "rules.yaml:4: `descriptors[0].rate_limit.algorithm` must be one of 'fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra'; got \"magic\"",
    ],
    [
      'burst on a counter',
      `domain: api\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1, burst: 3 }`,
      "rules.yaml:4: `descriptors[0].rate_limit.burst` must be unset for 'sliding-window' (burst applies to token-bucket, leaky-bucket and gcra); got 3",
    ],
    [
      'burst zero',
      `domain: api\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1, algorithm: gcra, burst: 0 }`,
      'rules.yaml:4: `descriptors[0].rate_limit.burst` must be a positive integer; got 0',
    ],
    [
      'limit too large for a sliding log',
      `domain: api\ndescriptors:\n  - key: a\n    rate_limit: { unit: day, requests_per_unit: 100000000, algorithm: sliding-log }`,
      "rules.yaml:4: `descriptors[0].rate_limit.requests_per_unit` must be small enough that limit x window (86400000 ms) stays under 2^50 for 'sliding-log', which keeps one entry per unit (a counter algorithm takes any size); got 100000000",
    ],
    [
      'limit past 2^50',
      `domain: api\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 2000000000000000 }`,
      'rules.yaml:4: `descriptors[0].rate_limit.requests_per_unit` must be at most 2^50 (1125899906842624); got 2000000000000000',
    ],
    [
      'unknown key in a descriptor',
      `domain: api\ndescriptors:\n  - key: a\n    ${ok}\n    shadow: true`,
      'rules.yaml:5: unknown key `shadow` in `descriptors[0]`',
    ],
    [
      'unknown keys in rate_limit',
      `domain: api\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      unit_multiplier: 2\n      per: x`,
      'rules.yaml:7: unknown keys `unit_multiplier`, `per` in `descriptors[0].rate_limit`',
    ],
    [
      'unknown top-level key',
      `domain: api\nname: x\ndescriptors: []`,
      'rules.yaml:2: unknown key `name` at the top level',
    ],
    [
      'missing domain',
      `descriptors: []`,
      'rules.yaml:1: `domain` is missing (must be a non-empty string)',
    ],
    [
      'empty domain',
      `domain: ""\ndescriptors: []`,
      'rules.yaml:1: `domain` must be a non-empty string; got ""',
    ],
    [
      'descriptors not a list',
      `domain: api\ndescriptors: { key: a }`,
      'rules.yaml:2: `descriptors` must be a list of descriptors; got {"key":"a"}',
    ],
    [
      'numeric value',
      `domain: api\ndescriptors:\n  - key: user\n    value: 42\n    ${ok}`,
      'rules.yaml:4: `descriptors[0].value` must be a string (quote numbers: "42"); got 42',
    ],
    [
      'missing key, nested',
      `domain: api\ndescriptors:\n  - key: a\n    descriptors:\n      - value: b\n        ${ok}`,
      'rules.yaml:5: `descriptors[0].descriptors[0].key` is missing (must be a non-empty string)',
    ],
    [
      'shadow_mode not a boolean',
      `domain: api\ndescriptors:\n  - key: a\n    ${ok}\n    shadow_mode: yes`,
      'rules.yaml:5: `descriptors[0].shadow_mode` must be true or false; got "yes"',
    ],
    [
      'rate_limit and unlimited',
      `domain: api\ndescriptors:\n  - key: a\n    ${ok}\n    unlimited: true`,
      'rules.yaml:5: `descriptors[0]` has both `rate_limit` and `unlimited: true`; keep one',
    ],
    [
      'shadow_mode without a rate_limit',
      `domain: api\ndescriptors:\n  - key: a\n    shadow_mode: true\n    descriptors:\n      - key: b\n        ${ok}`,
      'rules.yaml:4: `descriptors[0].shadow_mode` needs a `rate_limit` on the same descriptor',
    ],
    [
      'name without a rule',
      `domain: api\ndescriptors:\n  - key: a\n    name: n\n    descriptors:\n      - key: b\n        ${ok}`,
      'rules.yaml:4: `descriptors[0].name` needs a `rate_limit` or `unlimited: true` on the same descriptor',
    ],
    [
      'a descriptor that does nothing',
      `domain: api\ndescriptors:\n  - key: a\n  - key: b\n    ${ok}`,
      'rules.yaml:3: `descriptors[0]` needs a `rate_limit`, `unlimited: true` or nested `descriptors`',
    ],
    [
      'repeated sibling',
      `domain: api\ndescriptors:\n  - key: a\n    value: x\n    ${ok}\n  - key: a\n    value: x\n    ${ok}`,
      'rules.yaml:6: `descriptors[1]` repeats `key: a, value: x` of `descriptors[0]`',
    ],
    [
      'repeated name',
      `domain: api\ndescriptors:\n  - key: a\n    name: n\n    ${ok}\n  - key: b\n    name: n\n    ${ok}`,
      'rules.yaml:7: `descriptors[1]` is named "n", as `descriptors[0]` already is; rule names must be unique',
    ],
    [
      'empty file',
      ``,
      'rules.yaml: not a rules file: the rules must be a mapping with `domain` and `descriptors`; got nothing',
    ],
    [
      'not YAML',
      `domain: api\ndomain: web\ndescriptors: []`,
      'rules.yaml:2: not valid YAML or JSON: Map keys must be unique',
    ],
  ]
  test.each(cases)('%s', (_name, text, message) => {
    expect(errorOf(text)).toBe(message)
  })

  test('every problem is reported, in file order, with structured issues', () => {
    const text = `domain: api\ndescriptors:\n  - key: a\n    rate_limit: { unit: week, requests_per_unit: 0 }\n  - key: b\n    rate_limits: {}\n    ${ok}`
    let error: RulesError | undefined
    try {
      parseRules(text, { source: 'rules.yaml' })
    } catch (caught) {
      error = caught as RulesError
    }
    expect(error?.source).toBe('rules.yaml')
    expect(error?.issues.map((i) => [i.line, i.path])).toEqual([
      [4, 'descriptors[0].rate_limit.unit'],
      [4, 'descriptors[0].rate_limit.requests_per_unit'],
      [6, 'descriptors[1]'],
    ])
    expect(error?.message.split('\n')).toHaveLength(3)
  })

  test('an object is validated the same way, without lines', () => {
    expect(() =>
      loadRules({ domain: 'api', descriptors: [{ key: '' }] } as RulesDocument, {
        source: 'inline',
      }),
    ).toThrow(
      new RulesError('inline', [
        {
          path: 'descriptors[0].key',
          line: undefined,
          message: '`descriptors[0].key` must be a non-empty string; got ""',
        },
      ]),
    )
  })

  test('a missing file names the file and the reason', () => {
    expect(() => loadRules('/nonexistent/rules.yaml')).toThrow(
      '/nonexistent/rules.yaml: cannot be read (ENOENT)',
    )
  })
})

describe('sluice check-rules (the CLI, run as a child process)', () => {
  const run = promisify(execFile)
  const root = resolve(__dirname, '../../..')
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-cli-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  async function sluice(...args: string[]) {
    try {
      const { stdout, stderr } = await run(
        process.execPath,
        ['-r', 'ts-node/register/transpile-only', 'packages/cli/src/cli.ts', ...args],
        { cwd: root },
      )
      return { code: 0, stdout, stderr }
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string }
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
    }
  }

  test('--version prints the package version; help lists each command with its summary below it', async () => {
    const manifest = JSON.parse(readFileSync(join(root, 'packages/cli/package.json'), 'utf8'))
    expect(await sluice('--version')).toEqual({
      code: 0,
      stdout: `${manifest.version}\n`,
      stderr: '',
    })
    const help = await sluice('help')
    expect(help.code).toBe(0)
    const lines = help.stdout.split('\n')
    expect(lines[0]).toBe('usage: sluice <command> [arguments]')
    expect(lines).toContain('  check-rules <file>')
    expect(lines).toContain(
      '      validate a rules file (YAML or JSON) and print the effective rule table',
    )
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(100)
    expect(await sluice('check-rules', '--help')).toMatchObject({ code: 0 })
  })

  test('a flag that is no number is named with its value, not reported as NaN', async () => {
    const result = await sluice(
      'simulate',
      '--algorithm',
      'gcra',
      '--limit',
      'five',
      '--window',
      '1s',
    )
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/^`--limit` must be a number; got "five"/)
    expect(result.stderr).not.toMatch(/NaN/)
  })

  test('a valid file: exit 0 and the effective rule table', async () => {
    const file = join(dir, 'ok.yaml')
    writeFileSync(file, RULES)
    const result = await sluice('check-rules', file)
    expect(result).toEqual({
      code: 0,
      stdout: `${formatRuleTable(parseRules(RULES, { source: file }))}\n`,
      stderr: '',
    })
  })

  test('`--` ends the options: the file after it is checked, and a `--help` after it names a file', async () => {
    const file = join(dir, 'dashed.yaml')
    writeFileSync(file, RULES)
    const table = `${formatRuleTable(parseRules(RULES, { source: file }))}\n`
    expect(await sluice('check-rules', '--', file)).toEqual({ code: 0, stdout: table, stderr: '' })
    // After `--`, `--help` is a file's name (none here), not the flag.
    const named = await sluice('check-rules', '--', '--help')
    expect([named.code, named.stdout]).toEqual([1, ''])
    expect(named.stderr).toContain('--help')
    expect(named.stderr).not.toContain('usage')
    expect((await sluice('check-rules', '--')).code).toBe(2)
    expect((await sluice('check-rules', '--', file, file)).code).toBe(2)
  })

  test('an invalid file: exit 1 and the error, without a stack', async () => {
    const file = join(dir, 'bad.yaml')
    writeFileSync(
      file,
      `domain: api\ndescriptors:\n  - key: a\n    rate_limit: { unit: week, requests_per_unit: 1 }\n`,
    )
    const result = await sluice('check-rules', file)
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: `${file}:4: \`descriptors[0].rate_limit.unit\` must be one of 'second', 'minute', 'hour', 'day'; got "week"\n`,
    })
  })

  test('usage errors exit 2', async () => {
    const result = await sluice('check-rule', 'x')
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('unknown command "check-rule"')
    expect(result.stderr).toContain('check-rules <file>')
    expect((await sluice('check-rules')).code).toBe(2)
  })
})

test('zod is loaded with the first rules, not with @sluice/rules (it slows every HTTP request)', async () => {
  const script = `
    const loaded = () => Object.keys(require.cache).some((p) => p.includes('/node_modules/zod/'))
    const rules = require('./packages/rules/src/index')
    const before = loaded()
    rules.parseRules('domain: api\\ndescriptors: []\\n')
    console.log(JSON.stringify([before, loaded()]))
  `
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', '-e', script],
    { cwd: resolve(__dirname, '../../..') },
  )
  expect(JSON.parse(stdout)).toEqual([false, true])
})
