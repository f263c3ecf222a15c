import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import {
  createRulesLimiter,
  loadRules,
  parseRules,
  RulesError,
  watchRules,
  type RulesDocument,
} from '@sluice/rules'

const LIMIT = 'rate_limit: { unit: minute, requests_per_unit: 5 }'

/** A YAML alias of its own ancestor: the descriptor walk used to loop until out of memory. */
const CYCLE = `domain: api\ndescriptors: &a\n  - key: k\n    ${LIMIT}\n    descriptors: *a\n`

/** Billion laughs: 9^11 descriptors from a 600-byte file. */
function laughs(): string {
  const lines = ['domain: api', `a0: &a0 [{ key: k, ${LIMIT} }]`]
  for (let i = 1; i <= 11; i++)
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(', ')}]`,
    )
  lines.push('descriptors: *a11')
  return `${lines.join('\n')}\n`
}

/** `levels` descriptors, each nested in the one before, in flow style (JSON). */
function nested(levels: number): string {
  let descriptor = `{ "key": "k", "rate_limit": { "unit": "minute", "requests_per_unit": 5 } }`
  for (let i = 1; i < levels; i++) descriptor = `{ "key": "k", "descriptors": [${descriptor}] }`
  return `{ "domain": "api", "descriptors": [${descriptor}] }`
}

/** Levels of ten descriptors, each level's entries nesting the level below through an alias. */
function wideAliases(levels: number): string {
  const lines = ['domain: api', 'descriptors:']
  lines.push(
    `  - { key: l0, descriptors: &l0 [${Array(10).fill('{ key: k, unlimited: true }').join(', ')}] }`,
  )
  for (let i = 1; i <= levels; i++) {
    const below = Array(10)
      .fill(`{ key: k, descriptors: *l${i - 1} }`)
      .join(', ')
    lines.push(`  - { key: l${i}, descriptors: &l${i} [${below}] }`)
  }
  return `${lines.join('\n')}\n`
}

/** A file under 8 MiB with a handful of value marks whose one `!!binary` scalar is 5.9 MB of bytes. */
function binaryBomb(): string {
  const bytes = Buffer.alloc(Math.floor(5.9 * 1024 * 1024), 7).toString('base64')
  return `domain: api\ndescriptors: []\nx: !!binary ${bytes}\n`
}

function refusal(load: () => unknown): RulesError {
  try {
    load()
  } catch (error) {
    expect(error).toBeInstanceOf(RulesError)
    return error as RulesError
  }
  throw new Error('the rules loaded')
}

describe('hostile rules files are refused with a RulesError naming the file and the path', () => {
  test('an alias of its own ancestor: refused at the alias, with its line', () => {
    const error = refusal(() => parseRules(CYCLE, { source: 'cycle.yaml' }))
    expect(error.message).toBe(
      'cycle.yaml:5: `descriptors[0].descriptors` is an alias (*a) of a value that contains it; rules must be a tree',
    )
    expect(error.issues[0].path).toBe('descriptors[0].descriptors')
  })

  test('billion laughs: refused once its expansion passes 1,000,000 values', () => {
    const error = refusal(() => parseRules(laughs(), { source: 'laughs.yaml' }))
    expect(error.message).toMatch(
      /^laughs\.yaml:\d+: the rules hold more than 1000000 values once YAML aliases are expanded \(the count passed it at `a\d+(\[\d+\])+[^`]*`\); a rules file may hold at most 1000000$/,
    )
  })

  test('more than 100,000 descriptors after expansion: refused at the first one past', () => {
    // 100,000 descriptors under the last of five, in about 370,000 values.
    const error = refusal(() => parseRules(wideAliases(4), { source: 'wide.yaml' }))
    expect(error.issues).toHaveLength(1)
    expect(error.issues[0].message).toMatch(
      /is descriptor number 100001 once YAML aliases are expanded; a rules file may hold at most 100000$/,
    )
    // 12,345 descriptors are within the bound.
    expect(() => parseRules(wideAliases(3))).toThrow(/repeats `key: k`/)
  })

  test('descriptors nested 33 deep are refused; 32 deep load', () => {
    expect(parseRules(nested(32)).rules).toHaveLength(1)
    const error = refusal(() => parseRules(nested(33), { source: 'deep.json' }))
    expect(error.issues).toHaveLength(1)
    expect(error.issues[0].path).toBe(`${'descriptors[0].'.repeat(32)}descriptors[0]`)
    expect(error.issues[0].message).toMatch(
      /nests too deeply: values may nest at most 68 levels deep \(descriptors at most 32\)$/,
    )
  })

  test('1,000 and 100,000 levels of nesting: a RulesError, never a RangeError', () => {
    for (const levels of [1000, 100_000]) {
      const text = `domain: api\ndescriptors: []\nx: ${'['.repeat(levels)}${']'.repeat(levels)}\n`
      expect(refusal(() => parseRules(text, { source: 'deep.yaml' })).message).toMatch(
        /^deep\.yaml:\d+: .*nests too deeply; values may nest at most 68 levels deep \(descriptors at most 32\)$/,
      )
    }
    let value: unknown = 1
    for (let i = 0; i < 1000; i++) value = { a: value }
    const document = { domain: 'api', descriptors: [], x: value } as unknown as RulesDocument
    expect(refusal(() => loadRules(document, { source: 'object' })).message).toMatch(
      /^object: `x(\.a)+` nests too deeply: values may nest at most 68 levels deep/,
    )
  })

  test('a !!binary, or any tag read as something else than text, a number or a boolean, is refused', () => {
    expect(refusal(() => parseRules(binaryBomb(), { source: 'bytes.yaml' })).message).toBe(
      'bytes.yaml:3: `x` is a tag:yaml.org,2002:binary value; rules values are text, numbers, booleans or null',
    )
    const stamp = '%YAML 1.1\n---\ndomain: api\ndescriptors: []\nwhen: !!timestamp 2001-12-14\n'
    expect(refusal(() => parseRules(stamp, { source: 'when.yaml' })).message).toContain(
      '`when` is a tag:yaml.org,2002:timestamp value',
    )
  })

  test('an object that contains itself is refused, not walked forever', () => {
    const descriptor: Record<string, unknown> = {
      key: 'k',
      rate_limit: { unit: 'minute', requests_per_unit: 5 },
    }
    descriptor.descriptors = [descriptor]
    const document = { domain: 'api', descriptors: [descriptor] } as unknown as RulesDocument
    expect(refusal(() => loadRules(document, { source: 'object' })).message).toBe(
      'object: `descriptors[0].descriptors[0]` contains itself (a YAML alias of an enclosing value, or a cycle in the object); rules must be a tree',
    )
  })

  test('text over 8 MiB, or with more marks that start a value than 1,000,000, is not parsed', () => {
    const big = `domain: api\ndescriptors: []\n#${'x'.repeat(8 * 1024 * 1024)}\n`
    expect(refusal(() => parseRules(big, { source: 'big.yaml' })).message).toBe(
      `big.yaml: the file is ${big.length} characters long; a rules file may be at most 8388608 bytes (8 MiB)`,
    )
    // 2 MB of `1,` parsed into about 1 GB of YAML nodes.
    const dense = `domain: api\ndescriptors: []\nx: [${'1,'.repeat(1_000_000)}1]\n`
    expect(refusal(() => parseRules(dense, { source: 'dense.yaml' })).message).toBe(
      'dense.yaml: the file has 1000008 line breaks and `- : , [ { ? *` (the marks a value can start at); a rules file may have at most 1000000, as it may hold at most 1000000 values',
    )
  })

  test('a mapping that is not rules is refused without echoing its keys; long keys are cut', () => {
    const secret = 'root:$6$c2VjcmV0IGhhc2ggdGhhdCBtdXN0IG5vdCBsZWFr:20228:0:99999:7:::'
    expect(
      refusal(() =>
        parseRules(`${secret}\n${secret.replace('root', 'daemon')}\n`, { source: 'shadow' }),
      ).message,
    ).toBe(
      'shadow:1: not a rules file: the rules must be a mapping with `domain` and `descriptors`; got a mapping of 2 keys',
    )
    const typo = `domain: api\ndescriptors: []\n${secret}\n${Array.from({ length: 7 }, (_, i) => `k${i}: 1`).join('\n')}\n`
    const message = refusal(() => parseRules(typo, { source: 'typo.yaml' })).message
    expect(message).toBe(
      'typo.yaml:3: unknown keys `root:$6$c2VjcmV0IGhhc2ggdGhhdCBtdXN0IG5v...`, `k0`, `k1`, `k2`, `k3` and 3 more at the top level',
    )
  })
})

describe('files that are not regular, or too large, are not read', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-bounds-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  test('a device, a folder and a FIFO are refused at once; so is a file over 8 MiB', async () => {
    expect(refusal(() => loadRules('/dev/zero')).message).toBe(
      '/dev/zero: cannot be read (not a regular file)',
    )
    expect(refusal(() => loadRules(dir)).message).toBe(
      `${dir}: cannot be read (not a regular file)`,
    )
    const fifo = join(dir, 'fifo')
    await promisify(execFile)('mkfifo', [fifo])
    expect(refusal(() => loadRules(fifo)).message).toBe(
      `${fifo}: cannot be read (not a regular file)`,
    )
    const big = join(dir, 'big.yaml')
    writeFileSync(big, Buffer.alloc(8 * 1024 * 1024 + 1, 0x20))
    expect(refusal(() => loadRules(big)).message).toBe(
      `${big}: cannot be read (8388609 bytes or more; it may be at most 8388608 bytes (8 MiB))`,
    )
  })

  test('createRulesLimiter refuses a hostile file with the RulesError', () => {
    const file = join(dir, 'cycle.yaml')
    writeFileSync(file, CYCLE)
    expect(() => createRulesLimiter({ rules: file })).toThrow(
      `${file}:5: \`descriptors[0].descriptors\` is an alias (*a) of a value that contains it`,
    )
  })

  test('sluice check-rules on a 256 MB heap refuses each attack file with exit 1', async () => {
    const cli = resolve(__dirname, '../../cli/dist/cli.js')
    const attacks: [string, string][] = [
      ['cycle.yaml', CYCLE],
      ['laughs.yaml', laughs()],
      ['deep.json', nested(1000)],
      ['dense.yaml', `domain: api\ndescriptors: []\nx: [${'1,'.repeat(1_000_000)}1]\n`],
      ['binary.yaml', binaryBomb()],
    ]
    for (const [name, text] of attacks) {
      const file = join(dir, name)
      writeFileSync(file, text)
      const outcome = await promisify(execFile)(
        process.execPath,
        ['--max-old-space-size=256', cli, 'check-rules', file],
        { timeout: 30_000 },
      ).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
      )
      expect(outcome.code).toBe(1)
      expect(outcome.stderr).toMatch(new RegExp(`^${file.replace(/[.]/g, '\\.')}(:\\d+)?: `))
      expect(outcome.stderr).not.toMatch(/RangeError|ReferenceError|heap/)
    }
  }, 60_000)
})

describe('a hot reload of a hostile file keeps the rules in force', () => {
  let dir: string
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-bounds-watch-'))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  test.each([
    ['a cycle', CYCLE, '`descriptors[0].descriptors` is an alias (*a)'],
    ['billion laughs', laughs(), 'the rules hold more than 1000000 values'],
    ['deep nesting', nested(1000), 'nests too deeply'],
  ])('%s: reported, and the previous rules stay', async (_name, text, reason) => {
    const file = join(dir, 'rules.yaml')
    writeFileSync(file, `domain: api\ndescriptors:\n  - key: user\n    ${LIMIT}\n`)
    const warnings: string[] = []
    const watcher = watchRules(file, {
      logger: { warn: (m) => warnings.push(m) },
      debounceMs: 10_000,
    })
    try {
      const before = watcher.rules
      writeFileSync(file, text)
      expect(await watcher.reload()).toBe(false)
      expect(watcher.rules).toBe(before)
      expect(watcher.rules.rules[0].policy?.limit).toBe(5)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain('sluice: rules not reloaded, the previous rules stay in force:')
      expect(warnings[0]).toContain(reason)
    } finally {
      watcher.close()
    }
  })
})
