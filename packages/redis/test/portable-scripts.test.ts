import { spawnSync } from 'node:child_process'
import { ALGORITHMS, type Policy } from '@sluice/core'
import { RedisStore, SCRIPTS, type RedisStoreOptions } from '@sluice/redis'
import { startRedis, type RedisServer } from '@sluice/testkit'
import { Redis } from 'ioredis'
import { flatLua } from '../src/lua'
import { everyPolicySet } from './fixtures/policy-sets'

// The scripts must run on any server that runs Lua scripts: Redis 7 and Valkey (Lua 5.1),
// Dragonfly (Lua 5.4, and it refuses keys a script did not declare), managed services that
// refuse shebang flags. Checked three ways: the text of every script has none of the forms
// that differ between 5.1 and 5.4, both compilers accept it, and on a real server every key
// a script touches is one it was given in KEYS, all under one hash tag.

const baked = { limit: 7, windowMs: 60_000, burst: 9, precision: 6, slackMs: 0 }

/** Every script RedisStore sends: the shared ones, and each algorithm's own and batch forms. */
const ALL_SCRIPTS: readonly (readonly [string, string])[] = [
  ...Object.entries(SCRIPTS).map(([name, s]) => [name, s.lua] as const),
  ...ALGORITHMS.flatMap((a) => [
    [`${a} (own)`, flatLua(a, baked)] as const,
    [`${a} (batch)`, flatLua(a, baked, true)] as const,
  ]),
]

/** Lua that is not the same language on 5.1 and 5.4, or that some server refuses. */
const FORBIDDEN: readonly (readonly [string, RegExp])[] = [
  ['a shebang line (#!lua flags=...), refused before Redis 7', /#!/],
  ['integer division //, a syntax error on 5.1', /[^-]\/\//],
  ['math.pow, gone in 5.4', /math\.pow/],
  ['math.mod, gone in 5.2', /math\.mod\b/],
  ['table.getn, gone in 5.2', /\bgetn\b/],
  [
    'loadstring, setfenv, getfenv, module: gone in 5.2',
    /\b(loadstring|setfenv|getfenv|module)\s*\(/,
  ],
  ['string.gfind, gone in 5.2', /gfind/],
  ['the bit and bit32 libraries, Redis only', /\bbit(32)?\./],
  ['cjson, cmsgpack, struct: Redis-only libraries', /\b(cjson|cmsgpack|struct)\./],
  ['goto and attribs (<const>, <close>): 5.4 only', /\bgoto\b|<const>|<close>/],
  // 5.4 writes a float as 3.0: numbers reach Redis through string.format('%d', n) instead.
  ['tostring of anything but an argument or an error', /tostring\((?!ARGV\[|err\))/],
]

describe('the text of every script', () => {
  test.each(ALL_SCRIPTS)(
    '%s has none of the forms that differ between Lua 5.1 and 5.4',
    (_, lua) => {
      const code = lua.replace(/--.*$/gm, '') // comments may say anything
      const found = FORBIDDEN.filter(([, form]) => form.test(code)).map(([what]) => what)
      expect(found).toEqual([])
    },
  )

  test.each(ALL_SCRIPTS)(
    '%s calls unpack only as the local bound to table.unpack or unpack',
    (_, lua) => {
      const code = lua.replace(/--.*$/gm, '')
      const firstCall = code.search(/\bunpack\(/)
      if (firstCall === -1) return
      expect(code).toMatch(/local (?:[\w, ]+, )?unpack = (?:[\w.]+, )*table\.unpack or unpack\n/)
      expect(code.indexOf('table.unpack or unpack')).toBeLessThan(firstCall)
    },
  )

  test.each(['luac5.1', 'luac5.4'])('%s compiles every script', (luac) => {
    for (const [name, lua] of ALL_SCRIPTS) {
      const result = spawnSync(luac, ['-p', '-'], { input: lua, encoding: 'utf8' })
      expect({ name, status: result.status, stderr: result.stderr }).toEqual({
        name,
        status: 0,
        stderr: '',
      })
    }
  })
})

/** The generic scripts' batch forms (lua/driver.ts), by SHA. */
const GENERIC_BATCHES = new Set(
  Object.entries(SCRIPTS)
    .filter(([name]) => name.endsWith(':batch'))
    .map(([, script]) => script.sha),
)

describe('the keys every script touches, on a real server', () => {
  let server: RedisServer
  let client: Redis
  let monitored: Redis
  let monitor: Redis
  /** Script calls seen, each with the commands it ran (MONITOR lists them after it). */
  const calls: { script: string; declared: string[]; touched: string[] }[] = []

  beforeAll(async () => {
    server = await startRedis()
    client = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1 })
    monitored = new Redis({ host: server.host, port: server.port })
    monitor = await monitored.monitor()
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const command = args[0].toLowerCase()
      if (source !== 'lua' && (command === 'eval' || command === 'evalsha')) {
        const declared = args.slice(3, 3 + Number(args[2]))
        calls.push({ script: args[1], declared, touched: [] })
      } else if (source === 'lua' && command !== 'time') {
        calls[calls.length - 1].touched.push(args[1])
      }
    })
  })

  afterAll(async () => {
    client?.disconnect()
    monitor?.disconnect()
    monitored?.disconnect()
    await server?.stop()
  })

  /** Every operation on one key, as a limiter with `policies` makes them. */
  async function everyOperation(store: RedisStore, policies: Policy[], key: string) {
    const now = 1_700_000_000_000
    const request = { key, policies, cost: 1, now }
    await store.consume(request)
    await store.consume({ ...request, cost: 2, maxDelayMs: 5_000 })
    await store.peek(request)
    await store.refund({ ...request, at: now })
    await store.refund(request) // a reward
    await store.penalize(request)
    await store.block({ key, until: now + 60_000, now })
    await store.consume(request) // blocked
    await store.block({ key, until: now, now }) // lifted
    await store.reset(key, policies)
    await store.consume({ ...request, keys: policies.map((_, i) => `part${i}`) })
    // A batch of several keys, and of one key repeated, while a block exists.
    await store.block({ key: `${key}:other`, until: now + 60_000, now })
    await Promise.all(
      [`${key}:a`, `${key}:b`, key, key].map((k) => store.consume({ ...request, key: k })),
    )
  }

  const configurations: [string, Omit<RedisStoreOptions, 'client'>][] = [
    ['own scripts, server time', {}],
    ['own scripts, client time', { time: 'client' }],
    ['shared flat scripts', { policyScripts: 0, time: 'client' }],
  ]

  test.each(configurations)(
    '%s: every key touched was declared, under one hash tag',
    async (_, options) => {
      const store = new RedisStore({ client, blockCache: false, ...options })
      calls.length = 0
      let n = 0
      for (const policies of everyPolicySet()) {
        await everyOperation(store, policies, `pk${Date.now()}:${n++}`)
      }
      // MONITOR writes on its own socket: the PING's round trip and 50 ms let it catch up.
      await client.ping()
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(calls.length).toBeGreaterThan(100)
      const undeclared = calls.flatMap(({ declared, touched }) =>
        touched.filter((key) => !declared.includes(key)),
      )
      expect(undeclared).toEqual([])
      // One hash tag per call. Standalone only: the block script also keeps `sluice:blocks`
      // alive, and a batch decides several keys: a flat one (its keys, their blocks, then
      // `sluice:blocks`) or a generic one (lua/driver.ts: every decision's keys in turn).
      const tag = (key: string) => /^sluice:(\{[^}]*\}):/.exec(key)?.[1]
      const flatBatch = ({ declared }: { declared: string[] }) =>
        declared.length > 2 && declared.at(-1) === 'sluice:blocks'
      const genericBatch = ({ script }: { script: string }) =>
        GENERIC_BATCHES.has(script) || script.includes('local all_keys, all_argv')
      const tags = calls
        .filter((call) => !flatBatch(call) && !genericBatch(call))
        .map(({ declared }) => [...new Set(declared.filter((k) => k !== 'sluice:blocks').map(tag))])
      expect(tags.filter((t) => t.length !== 1 || t[0] === undefined)).toEqual([])
      // Flat batches go through per-policy scripts only; limiters with several limits batch
      // through the generic scripts.
      expect(calls.some(flatBatch)).toBe(options.policyScripts !== 0)
      expect(calls.some(genericBatch)).toBe(true)
    },
  )
})
