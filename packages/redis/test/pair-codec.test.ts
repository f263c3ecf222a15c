import { execFileSync } from 'node:child_process'
import { asInteger, decodePair, integerText, pairText, TEXT_INT } from '../src/lua/pair'
import { useRedisServer } from './fixtures/redis-server'

/*
 * The two-integer state's text (lua/pair.ts): its fast paths (one number formatted, one number
 * read and split) write and read exactly what `%d%013d` and the substrings do, on Redis's Lua
 * 5.1 and on lua5.1 and lua5.4 (Dragonfly's), at the edges of each path.
 */

/** a and b at each path's edges: a 0 to 898 (fast), 899 and past, or negative (the substrings); b 0 to 1e13 - 1. */
const PAIRS: Array<[number, number]> = [
  [0, 0],
  [0, 5],
  [0, 999_999_999_999],
  [0, 1_795_839_363_660],
  [898, 9_999_999_999_999],
  [899, 0],
  [899, 9_999_999_999_999],
  [899, 1_795_839_363_660],
  [900, 1_795_839_363_660],
  [900, 0],
  [12_345, 1_795_839_363_660],
  [999_999, 9_999_999_999_999],
  [7, 10_000_000_000_000],
  [7, -1],
  [-1, 1_795_839_363_660],
  [-5, 42],
]

/** Lua: for each pair, the text written, the text `%d%013d` or `%d:%d` writes, and the pair read back. */
function codecLua(pairs: ReadonlyArray<[number, number]>): string {
  const rows = pairs.map(([a, b]) => `{${a}, ${b}}`).join(', ')
  return `local floor = math.floor
${TEXT_INT}local out = {}
for _, p in ipairs({ ${rows} }) do
  local a, b = p[1], p[2]
  local text, plain
  if ${asInteger('b')} then
    text = ${integerText('a', 'b')}
    plain = string.format('%d%013d', a + 1, b)
  else
    text = ${pairText('a', 'b')}
    plain = text
  end
  local ra, rb = 0, 0
  local v = text
  ${decodePair('v', 'ra', 'rb')}
  out[#out + 1] = text .. ' ' .. plain .. ' ' .. string.format('%d %d', ra, rb) .. ' ' .. math.type_of_b
end
return out`
}

/** Lua 5.4 tells integers from floats: the read pair must stay integers, as the substrings left them. */
function withTypes(lua: string): string {
  return lua.replace(
    'math.type_of_b',
    "((math.type and (math.type(ra) .. ',' .. math.type(rb))) or 'numbers')",
  )
}

function expected(): string[] {
  return PAIRS.map(([a, b]) => {
    const integer = b >= 0 && b < 1e13
    const text = integer ? `${a + 1}${String(b).padStart(13, '0')}` : `${a}:${b}`
    return `${text} ${text} ${a} ${b}`
  })
}

/** Each row without its last field (the number types), and the types apart. */
function split(rows: readonly string[]): { rows: string[]; types: string[] } {
  return {
    rows: rows.map((row) => row.slice(0, row.lastIndexOf(' '))),
    types: rows.map((row) => row.slice(row.lastIndexOf(' ') + 1)),
  }
}

const redis = useRedisServer({ maxRetriesPerRequest: 1 })

test("Redis's Lua writes and reads each pair as %d%013d and the substrings do", async () => {
  const rows = (await redis.admin.eval(withTypes(codecLua(PAIRS)), 0)) as string[]
  expect(split(rows).rows).toEqual(expected())
})

describe.each(['lua5.1', 'lua5.4'])('%s', (lua) => {
  test('writes and reads each pair as %d%013d and the substrings do, integers kept', () => {
    const program = `local function run()\n${withTypes(codecLua(PAIRS))}\nend\nprint(table.concat(run(), '\\n'))`
    const printed = execFileSync(lua, ['-'], { input: program }).toString().trim().split('\n')
    const { rows, types } = split(printed)
    expect(rows).toEqual(expected())
    if (lua === 'lua5.4') expect(new Set(types)).toEqual(new Set(['integer,integer']))
  })
})
