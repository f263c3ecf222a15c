// The registry's `takes` column decides which algorithm-specific options a limit accepts:
// every other algorithm refuses them, naming the ones that take them.
import { REGISTRY } from '../src/algorithms'
import { resolvePolicy } from '../src/options'

const VALUES = { burst: 2, precision: 2, anchor: 'first-request' } as const
const OPTIONS = Object.keys(VALUES) as (keyof typeof VALUES)[]

describe.each(REGISTRY.map((row) => [row.name, row] as const))('%s', (name, row) => {
  test.each(OPTIONS)('%s is accepted exactly when the row takes it', (option) => {
    const limit = { algorithm: name, limit: 4, window: 1000, [option]: VALUES[option] }
    const takers = REGISTRY.filter((r) => (r.takes as readonly string[]).includes(option))
    const names = takers.map((r) => r.name)
    const listed =
      names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`
    if ((row.takes as readonly string[]).includes(option)) {
      expect(() => resolvePolicy(limit)).not.toThrow()
    } else {
      expect(() => resolvePolicy(limit)).toThrow(
        `\`${option}\` must be unset for '${name}' (${option} applies to ${listed}); got ${JSON.stringify(VALUES[option])}`,
      )
    }
  })
})

test('burst is taken by the meters, and by them only', () => {
  expect(REGISTRY.filter((row) => (row.takes as readonly string[]).includes('burst'))).toEqual(
    REGISTRY.filter((row) => row.family === 'meter'),
  )
})

test('oneCount (what a peer increment store runs) is a counter kept as one pair', () => {
  const oneCount = REGISTRY.filter((row) => 'oneCount' in row && row.oneCount)
  expect(oneCount.map((row) => row.name)).toEqual(['fixed-window'])
  for (const row of oneCount) expect([row.family, row.state]).toEqual(['counter', 'pair'])
})

test("each code has its own letter in RedisStore's short state keys", () => {
  const letters = REGISTRY.flatMap((row) => [
    row.letter,
    ...('firstRequest' in row ? [row.firstRequest.letter] : []),
  ])
  expect(new Set(letters).size).toBe(letters.length)
  for (const letter of letters) expect(letter).toMatch(/^[a-z]$/)
})
