import { fork } from 'node:child_process'
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  parseRules,
  RulesError,
  watchRules,
  type DescriptorEntry,
  type RuleSet,
  type RulesWatcher,
} from '@sluice/rules'

const rules = (perMinute: number, extra = '') =>
  `domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: ${perMinute} }\n${extra}`

const limitOf = (set: RuleSet) => set.rules[0].policy?.limit

/** Routes with a limit each and per-user limits nested under each route: `routes * 41` rules. */
function routesFile(routes: number, usersPerRoute: number): string {
  const lines = ['domain: api', 'descriptors:']
  for (let r = 0; r < routes; r++) {
    lines.push(
      '  - key: route',
      `    value: /r/${r}`,
      `    rate_limit: { unit: minute, requests_per_unit: ${100 + r} }`,
      '    descriptors:',
    )
    for (let u = 0; u < usersPerRoute; u++) {
      lines.push(
        '      - key: user',
        `        value: u${u}`,
        `        rate_limit: { unit: second, requests_per_unit: ${u + 1}, algorithm: token-bucket }`,
      )
    }
  }
  return `${lines.join('\n')}\n`
}

/** What fixtures/reload-gaps.js reports of one reload. */
interface ReloadOutcome {
  reloaded: boolean
  /** The longest the event loop went without running a 1 ms interval. */
  worstGapMs: number
  /** The same, less V8's collections inside that stretch: the reload's own work. */
  worstOwnGapMs: number
  longestCollectionMs: number
  rules: number
  matched: [string, number][]
  warnings: string[]
}

/** Polls until `check` holds (short waits, bounded), so a test waits only as long as it must. */
async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('watchRules: hot reload from a real file', () => {
  let dir: string
  let file: string
  let watcher: RulesWatcher | undefined
  const warnings: string[] = []
  const infos: string[] = []
  const logger = { warn: (m: string) => warnings.push(m), info: (m: string) => infos.push(m) }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-watch-'))
    file = join(dir, 'rules.yaml')
    warnings.length = 0
    infos.length = 0
  })
  afterEach(() => {
    watcher?.close()
    watcher = undefined
    rmSync(dir, { recursive: true, force: true })
  })

  test('a valid new version replaces the set; the old set object is untouched', async () => {
    writeFileSync(file, rules(5))
    const changes: [number | undefined, number | undefined][] = []
    watcher = watchRules(file, {
      logger,
      debounceMs: 20,
      onChange: (next, previous) => changes.push([limitOf(next), limitOf(previous)]),
    })
    const first = watcher.rules
    expect(limitOf(first)).toBe(5)
    writeFileSync(file, rules(7))
    await until(() => changes.length === 1)
    expect(changes).toEqual([[7, 5]])
    expect(limitOf(watcher.rules)).toBe(7)
    expect(limitOf(first)).toBe(5)
    expect(infos).toEqual([`sluice: rules reloaded from ${file} (1 rules)`])
    expect(warnings).toEqual([])
  })

  test('an invalid version is reported and the previous rules stay in force', async () => {
    writeFileSync(file, rules(5))
    const onChange = jest.fn()
    watcher = watchRules(file, { logger, debounceMs: 20, onChange })
    const before = watcher.rules
    writeFileSync(file, rules(5).replace('minute', 'week'))
    await until(() => warnings.length === 1)
    expect(warnings[0]).toBe(
      `sluice: rules not reloaded, the previous rules stay in force:\n${file}:4: \`descriptors[0].rate_limit.unit\` must be one of 'second', 'minute', 'hour', 'day'; got "week"`,
    )
    expect(watcher.rules).toBe(before)
    expect(onChange).not.toHaveBeenCalled()
    // Fixing the file takes effect.
    writeFileSync(file, rules(9))
    await until(() => onChange.mock.calls.length === 1)
    expect(limitOf(watcher.rules)).toBe(9)
  })

  test('rapid successive writes settle on the last version, read once', async () => {
    writeFileSync(file, rules(1))
    const onChange = jest.fn()
    watcher = watchRules(file, { logger, debounceMs: 50, onChange })
    for (let n = 2; n <= 20; n++) writeFileSync(file, rules(n))
    await until(() => limitOf(watcher!.rules) === 20)
    // Give a late event the chance to be (wrongly) applied before checking nothing else happened.
    await new Promise((resolve) => setTimeout(resolve, 120))
    expect(limitOf(watcher.rules)).toBe(20)
    expect(onChange.mock.calls.length).toBeLessThanOrEqual(2)
    expect(limitOf(onChange.mock.calls.at(-1)![0] as RuleSet)).toBe(20)
  })

  test('rapid writes ending in an invalid version leave the last applied valid rules', async () => {
    writeFileSync(file, rules(1))
    watcher = watchRules(file, { logger, debounceMs: 20 })
    writeFileSync(file, rules(2))
    await until(() => limitOf(watcher!.rules) === 2)
    writeFileSync(file, rules(3))
    writeFileSync(file, 'domain: [')
    await until(() => warnings.length === 1)
    expect(limitOf(watcher.rules)).toBe(2)
    expect(warnings[0]).toContain(`${file}:1: not valid YAML or JSON`)
  })

  test('an editor-style save (write a temp file, rename it over) is seen', async () => {
    writeFileSync(file, rules(5))
    watcher = watchRules(file, { logger, debounceMs: 20 })
    const temp = join(dir, '.rules.yaml.tmp')
    writeFileSync(temp, rules(6))
    renameSync(temp, file)
    await until(() => limitOf(watcher!.rules) === 6)
    // And the watch survives the rename.
    writeFileSync(file, rules(8))
    await until(() => limitOf(watcher!.rules) === 8)
  })

  test('its folder swapped for another, or deleted and made again: the new one is watched', async () => {
    writeFileSync(file, rules(5))
    watcher = watchRules(file, { logger, debounceMs: 20 })
    // `mv conf.new conf`: the watch was on the folder moved away.
    const next = `${dir}.next`
    mkdirSync(next)
    writeFileSync(join(next, 'rules.yaml'), rules(6))
    renameSync(dir, `${dir}.old`)
    renameSync(next, dir)
    await until(() => limitOf(watcher!.rules) === 6)
    writeFileSync(file, rules(7))
    await until(() => limitOf(watcher!.rules) === 7)
    // `rm -rf conf && mkdir conf`, then the file written.
    rmSync(dir, { recursive: true, force: true })
    await new Promise((resolve) => setTimeout(resolve, 2500)) // the folder looked up while gone
    mkdirSync(dir)
    writeFileSync(file, rules(8))
    await until(() => limitOf(watcher!.rules) === 8)
    writeFileSync(file, rules(9))
    await until(() => limitOf(watcher!.rules) === 9)
    rmSync(`${dir}.old`, { recursive: true, force: true })
  }, 20_000)

  test('reload() reads now; an unchanged file is not applied again', async () => {
    writeFileSync(file, rules(5))
    const onChange = jest.fn()
    watcher = watchRules(file, { logger, debounceMs: 10_000, onChange })
    expect(await watcher.reload()).toBe(false)
    writeFileSync(file, rules(6))
    expect(await watcher.reload()).toBe(true)
    expect(limitOf(watcher.rules)).toBe(6)
    expect(onChange).toHaveBeenCalledTimes(1)
  })

  test('a missing or invalid file at start-up throws; close() stops reloading', async () => {
    expect(() => watchRules(join(dir, 'none.yaml'), { logger })).toThrow(RulesError)
    writeFileSync(file, rules(5).replace('minute', 'week'))
    expect(() => watchRules(file, { logger })).toThrow('must be one of')
    writeFileSync(file, rules(5))
    watcher = watchRules(file, { logger, debounceMs: 10 })
    watcher.close()
    writeFileSync(file, rules(6))
    expect(await watcher.reload()).toBe(false)
    expect(limitOf(watcher.rules)).toBe(5)
  })

  describe('a large file reloads off the event loop', () => {
    const entries = (route: number, user: number): DescriptorEntry[] => [
      ['route', `/r/${route}`],
      ['user', `u${user}`],
    ]

    /**
     * Reloads `text` over a one-rule file in a process of its own (fixtures/reload-gaps.js): a
     * fresh heap, as a server's, so that the test runner's full collections are not timed.
     */
    function reloadInChild(text: string): Promise<ReloadOutcome> {
      writeFileSync(file, rules(5))
      const large = join(dir, 'large.yaml')
      writeFileSync(large, text)
      const child = fork(join(__dirname, 'fixtures', 'reload-gaps.js'), [file, large], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      })
      return new Promise((resolve, reject) => {
        child.once('message', (outcome: ReloadOutcome) => resolve(outcome))
        child.once('exit', (code) =>
          reject(new Error(`the reload process exited with code ${code}`)),
        )
      })
    }

    test('a 7 MB file (58,220 rules): the reload never holds the event loop for 50 ms', async () => {
      const big = routesFile(1420, 40)
      expect(big.length).toBeGreaterThan(7_000_000)
      const outcome = await reloadInChild(big)
      expect(outcome.reloaded).toBe(true)
      expect(outcome.rules).toBe(1420 * 41)
      expect(outcome.matched).toEqual([
        ['api.route_/r/1419', 1519],
        ['api.route_/r/1419.user_u39', 40],
      ])
      expect(outcome.warnings).toEqual([])
      expect(outcome.worstOwnGapMs).toBeLessThan(50)
    }, 60_000)

    test('compiled in slices, a nested file equals the one compiled at once', async () => {
      // 3 levels, with a repeated bare key and slices that end inside a subtree.
      const text = routesFile(30, 25).replace(
        /^( {4}descriptors:)$/gm,
        '    descriptors:\n      - key: plan\n        descriptors:\n          - key: user\n            rate_limit: { unit: hour, requests_per_unit: 9 }',
      )
      writeFileSync(file, rules(5))
      watcher = watchRules(file, { logger, debounceMs: 10_000 })
      writeFileSync(file, text)
      expect(await watcher.reload()).toBe(true)
      const atOnce = parseRules(text, { source: file })
      expect(watcher.rules.rules).toEqual(atOnce.rules)
      for (const probe of [
        entries(0, 0),
        entries(29, 24),
        [
          ['plan', 'pro'],
          ['user', 'x'],
        ] as DescriptorEntry[],
        entries(7, 99),
      ]) {
        expect(watcher.rules.match(probe)).toEqual(atOnce.match(probe))
      }
    }, 60_000)

    test('a large invalid file keeps the previous rules and names the line', async () => {
      const text = routesFile(300, 40).replace('requests_per_unit: 40,', 'requests_per_unit: -40,')
      const outcome = await reloadInChild(text)
      expect(outcome.reloaded).toBe(false)
      expect(outcome.rules).toBe(1)
      expect(outcome.worstGapMs).toBeLessThan(50)
      const line = text.split('\n').findIndex((l) => l.includes('-40')) + 1
      expect(outcome.warnings).toEqual([
        `sluice: rules not reloaded, the previous rules stay in force:\n${file}:${line}: \`descriptors[0].descriptors[39].rate_limit.requests_per_unit\` must be a positive integer; got -40`,
      ])
    }, 60_000)

    test('close() during a reload stops it; the previous rules stay', async () => {
      writeFileSync(file, rules(5))
      watcher = watchRules(file, { logger, debounceMs: 10_000 })
      writeFileSync(file, routesFile(300, 40))
      const reloading = watcher.reload()
      await new Promise((resolve) => setTimeout(resolve, 50))
      watcher.close()
      expect(await reloading).toBe(false)
      expect(limitOf(watcher.rules)).toBe(5)
      expect(warnings).toEqual([])
    })
  })
})
