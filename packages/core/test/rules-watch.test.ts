import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RulesError, watchRules, type RuleSet, type RulesWatcher } from '@sluice/core'

const rules = (perMinute: number, extra = '') =>
  `domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: ${perMinute} }\n${extra}`

const limitOf = (set: RuleSet) => set.rules[0].policy?.limit

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
})
