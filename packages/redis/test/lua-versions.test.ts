import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { type Policy } from '@sluice/core'
import { RedisStore, type RedisStoreOptions } from '@sluice/redis'
import { startRedis, type RedisServer } from '@sluice/testkit'
import { Redis } from 'ioredis'
import { everyPolicySet } from './fixtures/policy-sets'

// Dragonfly runs scripts on Lua 5.4, Redis and Valkey on 5.1. Every script call a store makes
// on Redis is recorded with its reply, then replayed on a real lua5.4 (and, to show the replay
// itself is faithful, on lua5.1), whose redis.call runs each command on the same real server
// under other keys (fixtures/lua-bridge.lua). Each reply and the state left in Redis must be
// the same. The bridge refuses any number passed to Redis that is not an integer.

interface Call {
  lua: string
  keys: string[]
  argv: string[]
  reply: unknown
}

let server: RedisServer
let admin: Redis
const recorders: Redis[] = []

beforeAll(async () => {
  server = await startRedis()
  admin = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1 })
})

afterAll(async () => {
  admin?.disconnect()
  for (const client of recorders) client.disconnect()
  await server?.stop()
})

/** Replies as comparable values: Buffers as strings, errors as { err }. */
function plainReply(reply: unknown): unknown {
  if (Buffer.isBuffer(reply)) return reply.toString()
  if (reply instanceof Error) return { err: reply.message }
  if (Array.isArray(reply)) return reply.map(plainReply)
  return reply
}

/** An ioredis client that records every script call that ran, in order, with its reply. */
function recording(calls: Call[]): Redis {
  const client = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1 })
  recorders.push(client)
  const sources = new Map<string, string>()
  const record =
    (method: 'evalBuffer' | 'evalshaBuffer') =>
    (...command: string[]): Promise<unknown> => {
      const [head, numkeys, ...rest] = command
      if (method === 'evalBuffer') sources.set(createHash('sha1').update(head).digest('hex'), head)
      const lua = sources.get(head) ?? head
      const n = Number(numkeys)
      const send = (
        client as unknown as Record<typeof method, (...args: string[]) => Promise<unknown>>
      )[method].bind(client)
      return send(...command).then((reply) => {
        calls.push({ lua, keys: rest.slice(0, n), argv: rest.slice(n), reply: plainReply(reply) })
        return reply
      })
    }
  return Object.assign(Object.create(client) as Redis, {
    evalBuffer: record('evalBuffer'),
    evalshaBuffer: record('evalshaBuffer'),
  })
}

/** A lua5.x process running fixtures/lua-bridge.lua, its redis.call answered by `redis`. */
class Bridge {
  private readonly child: ChildProcessWithoutNullStreams
  private buffered = Buffer.alloc(0)
  private wake: (() => void) | undefined

  constructor(
    lua: string,
    private readonly redis: Redis,
  ) {
    this.child = spawn(lua, [join(__dirname, 'fixtures', 'lua-bridge.lua')])
    this.child.stdout.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk])
      this.wake?.()
    })
  }

  close(): void {
    this.child.kill()
  }

  private put(...parts: string[]): void {
    for (const part of parts) this.child.stdin.write(`${Buffer.byteLength(part)}:${part},`)
  }

  private async token(): Promise<string> {
    for (;;) {
      const colon = this.buffered.indexOf(':')
      if (colon !== -1) {
        const length = Number(this.buffered.subarray(0, colon).toString())
        if (this.buffered.length >= colon + 1 + length + 1) {
          const value = this.buffered.subarray(colon + 1, colon + 1 + length).toString()
          this.buffered = this.buffered.subarray(colon + 1 + length + 1)
          return value
        }
      }
      await new Promise<void>((resolve) => (this.wake = resolve))
    }
  }

  private async value(): Promise<unknown> {
    const kind = await this.token()
    if (kind === 'i') return Number(await this.token())
    if (kind === 's') return this.token()
    if (kind === 'n') return null
    if (kind === 'e') return { err: await this.token() }
    if (kind === 't') return this.token()
    const items = []
    for (let n = Number(await this.token()); n > 0; n--) items.push(await this.value())
    return items
  }

  private answer(reply: unknown): void {
    if (reply === null) this.put('n')
    else if (typeof reply === 'number') this.put('i', String(reply))
    else if (Array.isArray(reply)) {
      this.put('a', String(reply.length))
      for (const item of reply) this.answer(item)
    } else this.put('s', String(reply))
  }

  /** Runs one script call, its Redis commands on the real server; its reply as Redis gives it. */
  async run(lua: string, keys: string[], argv: string[]): Promise<unknown> {
    this.put(lua, String(keys.length), ...keys, String(argv.length), ...argv)
    for (;;) {
      const kind = await this.token()
      if (kind === 'done') return this.value()
      if (kind === 'fail') return { failed: await this.token() }
      const command: string[] = []
      for (let n = Number(await this.token()); n > 0; n--) command.push(await this.token())
      try {
        const reply = await this.redis.call(command[0], ...command.slice(1))
        if (reply === 'OK' && command[0].toUpperCase() === 'SET') this.put('t', 'OK')
        else this.answer(reply)
      } catch (error) {
        this.put('e', (error as Error).message)
      }
    }
  }
}

/** Every operation, with client time moving on, on a few keys. */
async function operations(store: RedisStore, policies: Policy[]): Promise<void> {
  let now = 1_700_000_000_000
  const keys = ['a', 'b{x}', '']
  for (let step = 0; step < 24; step++) {
    const key = keys[step % keys.length]
    const request = { key, policies, cost: 1 + (step % 3), now }
    await store.consume(request)
    if (step % 4 === 0) await store.peek({ ...request, cost: 0 })
    if (step % 5 === 1) await store.refund({ ...request, at: now })
    if (step % 7 === 2) await store.refund(request) // a reward
    if (step % 6 === 3) await store.penalize(request)
    if (step % 8 === 4) await store.consume({ ...request, maxDelayMs: 30_000 })
    if (step === 9) await store.block({ key, until: now + 5_000, now })
    // Several at once: a batch where the store makes one.
    await Promise.all(keys.map((k) => store.consume({ ...request, key: k })))
    now += [0, 1, 999, 7_000, 61_000][step % 5]
  }
}

/** The keys under `prefix`, each with its type and value, by name without the prefix. */
async function stateUnder(prefix: string): Promise<Record<string, unknown>> {
  const state: Record<string, unknown> = {}
  for (const key of (await admin.keys(`${prefix}:*`)).sort()) {
    const type = await admin.type(key)
    const value =
      type === 'string'
        ? await admin.get(key)
        : type === 'hash'
          ? await admin.hgetall(key)
          : await admin.zrange(key, 0, -1, 'WITHSCORES')
    state[key.slice(prefix.length)] = { type, value }
  }
  return state
}

const configurations: [string, Omit<RedisStoreOptions, 'client'>][] = [
  ['per-policy and batch scripts', {}],
  ['shared scripts', { policyScripts: 0 }],
  ['packed layout scripts', { packed: { groups: 4 } }],
]

describe.each(['lua5.1', 'lua5.4'])('replayed on %s', (lua) => {
  test.each(configurations)(
    '%s, and the generic ones: every reply and the state left are Redis’s',
    async (name, options) => {
      const calls: Call[] = []
      const prefix = `r${Date.now().toString(36)}${lua.slice(-1)}${name.length}`
      const store = new RedisStore({
        client: recording(calls),
        prefix,
        time: 'client',
        clockToleranceMs: 600_000,
        blockCache: false,
        ...options,
      })
      for (const policies of everyPolicySet()) await operations(store, policies)
      expect(calls.length).toBeGreaterThan(500)

      const bridge = new Bridge(lua, admin)
      const replay = `${prefix}x`
      const replies: unknown[] = []
      try {
        for (const call of calls) {
          const keys = call.keys.map((k) => replay + k.slice(prefix.length))
          replies.push(await bridge.run(call.lua, keys, call.argv))
        }
      } finally {
        bridge.close()
      }
      expect(replies).toEqual(calls.map((call) => call.reply))
      expect(await stateUnder(replay)).toEqual(await stateUnder(prefix))
    },
    60_000,
  )
})
