import { counts } from '../../core/test/helpers'
import { FailingStore } from '@sluice/testkit'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import type { ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Registry } from 'prom-client'
import { prometheusMetrics, StoreError, type DecisionEvent } from '@sluice/core'
import { type HttpLimitOptions, type HttpRequestLike } from '@sluice/http'
import {
  createHttpLimiter,
  createRulesLimiter,
  watchRules,
  type DescriptorEntry,
  type RulesDocument,
} from '@sluice/rules'

const T0 = 60_000 * 30_000

const fixed = (n: number) => ({
  unit: 'minute' as const,
  requests_per_unit: n,
  algorithm: 'fixed-window' as const,
})

/** A per-route rule, a per-user rule and a shadow per-IP rule, all named. */
const RULES: RulesDocument = {
  domain: 'api',
  descriptors: [
    { key: 'route', value: '/search', name: 'search-route', rate_limit: fixed(5) },
    { key: 'user', name: 'per-user', rate_limit: fixed(3) },
    { key: 'ip', name: 'per-ip', rate_limit: fixed(2), shadow_mode: true },
  ],
}

interface Req extends HttpRequestLike {
  url: string
}

const descriptors = (req: Req): DescriptorEntry[] => [
  ['route', req.url],
  ['user', req.headers['x-user'] as string | undefined],
  ['ip', req.ip],
]

/** Observations of the latency histogram per rule name. */
async function latencyCounts(registry: Registry): Promise<Record<string, number>> {
  const histogram = (await registry.getMetricsAsJSON()).find(
    (m) => m.name === 'sluice_store_latency_seconds',
  )
  const observations = (histogram?.values ?? []).filter(
    (v) => (v as { metricName?: string }).metricName === 'sluice_store_latency_seconds_count',
  )
  return Object.fromEntries(observations.map((v) => [String(v.labels.policy), v.value]))
}

/** The pipeline never touches `res` without refunds or a queue. */
const res = {} as ServerResponse

function http(options: HttpLimitOptions<Req>) {
  return createHttpLimiter<Req>(
    { clock: () => T0, logger: { warn: () => {} }, ...options },
    { framework: 'Test', resetStyle: 'epoch' },
  )
}

function request(user: string | undefined, ip = '10.0.0.1'): Req {
  return { url: '/search', ip, headers: user === undefined ? {} : { 'x-user': user } }
}

/** A real store whose every call fails, as a dead Redis would. */
const failing = new FailingStore()

describe('rules report to onDecision', () => {
  test('a scripted sequence through the HTTP pipeline: exact Prometheus counts per rule', async () => {
    const registry = new Registry()
    const metrics = prometheusMetrics({ registry })
    const events: DecisionEvent[] = []
    const limiter = http({
      rules: RULES,
      descriptors,
      onDecision: (event) => {
        events.push(event)
        metrics(event)
      },
    })
    const statuses: string[] = []
    const script: Array<[string | undefined, string?]> = [
      ['alice'], // 1: all three rules admit
      ['alice'], // 2: all admit; per-ip is now full
      ['alice'], // 3: per-ip (shadow) would reject: admitted, the enforced rules count it alone
      ['alice'], // 4: per-user rejects (429); the route admits but takes nothing; per-ip would reject
      ['bob'], // 5: admitted; per-ip would reject
      ['bob'], // 6: admitted (the route's 5th); per-ip would reject
      ['bob'], // 7: the route rejects (429); per-user admits bob; per-ip would reject
      [undefined, '10.0.0.2'], // 8: no user rule; the route rejects; per-ip admits the new IP
    ]
    for (const [user, ip] of script) {
      const verdict = await limiter.decide(request(user, ip), res)
      statuses.push(verdict.action)
    }
    expect(statuses).toEqual([
      'allow',
      'allow',
      'allow',
      'reject',
      'allow',
      'allow',
      'reject',
      'reject',
    ])

    expect(await counts(registry)).toEqual({
      sluice_decisions_allowed_total: { 'search-route': 6, 'per-user': 6, 'per-ip': 3 },
      sluice_decisions_rejected_total: { 'search-route': 2, 'per-user': 1 },
      sluice_decisions_shadow_rejected_total: { 'per-ip': 5 },
      // > 80% used after: the route's 5th (request 6), alice's 3rd (3), the IP's 2nd (2).
      sluice_decisions_near_limit_total: { 'search-route': 1, 'per-user': 1, 'per-ip': 1 },
    })
    // One event (one latency observation) per matched rule per request.
    expect(await latencyCounts(registry)).toEqual({ 'search-route': 8, 'per-user': 7, 'per-ip': 8 })

    // Request 3, in full: the shadow rule from the first call, the enforced ones from the second.
    const third = events.filter((_e, i) => i >= 6 && i < 9)
    expect(
      third.map(({ storeLatencyMs, ...rest }) => ({ ...rest, timed: storeLatencyMs >= 0 })),
    ).toEqual([
      {
        key: 'api|ip=10.0.0.1',
        policy: 'per-ip',
        allowed: false,
        shadow: true,
        limit: 2,
        capacity: 2,
        remaining: 0,
        cost: 1,
        degraded: false,
        storeError: undefined,
        timed: true,
      },
      {
        key: 'api|route=/search',
        policy: 'search-route',
        allowed: true,
        shadow: false,
        limit: 5,
        capacity: 5,
        remaining: 2,
        cost: 1,
        degraded: false,
        storeError: undefined,
        timed: true,
      },
      {
        key: 'api|user=alice',
        policy: 'per-user',
        allowed: true,
        shadow: false,
        limit: 3,
        capacity: 3,
        remaining: 0,
        cost: 1,
        degraded: false,
        storeError: undefined,
        timed: true,
      },
    ])
    // Request 4: the route would have admitted it but took nothing, so 2 are still left.
    expect(events.slice(9, 12).map((e) => [e.policy, e.allowed, e.shadow, e.remaining])).toEqual([
      ['search-route', true, false, 2],
      ['per-user', false, false, 0],
      ['per-ip', false, true, 0],
    ])
  })

  test('with limit/limits the adapters pass onDecision to the limiter: one event per request', async () => {
    const events: DecisionEvent[] = []
    const limiter = http({ limit: 1, onDecision: (e) => events.push(e) })
    await limiter.decide(request('alice'), res)
    await limiter.decide(request('alice'), res)
    expect(events.map((e) => [e.key, e.policy, e.allowed, e.shadow])).toEqual([
      ['10.0.0.1', '1-per-1m', true, false],
      ['10.0.0.1', '1-per-1m', false, false],
    ])
  })

  test('store failures: one event per matched rule, degraded (allow/deny) or undecided (throw)', async () => {
    const registry = new Registry()
    const metrics = prometheusMetrics({ registry })
    const events: DecisionEvent[] = []
    const record = (event: DecisionEvent) => {
      events.push(event)
      metrics(event)
    }
    const entries: DescriptorEntry[] = [
      ['route', '/search'],
      ['user', 'alice'],
      ['ip', '10.0.0.1'],
    ]
    const open = createRulesLimiter({
      rules: RULES,
      store: failing,
      onStoreError: 'allow',
      onDecision: record,
    })
    expect((await open.consume(entries)).decision?.degraded).toBe(true)
    const shut = createRulesLimiter({
      rules: RULES,
      store: failing,
      onStoreError: 'deny',
      onDecision: record,
    })
    expect((await shut.consume(entries)).decision?.allowed).toBe(false)
    const throwing = createRulesLimiter({ rules: RULES, store: failing, onDecision: record })
    const thrown: unknown = await throwing.consume(entries).catch((error: unknown) => error)
    expect(thrown).toBeInstanceOf(StoreError)
    expect((thrown as StoreError).message).toBe('store call failed')

    expect(events).toHaveLength(9)
    expect(events.every((e) => e.storeError instanceof StoreError)).toBe(true)
    // 'throw': the events carry the very error consume rejects with.
    expect(events.slice(6).every((e) => e.storeError === thrown)).toBe(true)
    expect(events.map((e) => [e.policy, e.allowed, e.shadow, e.degraded, e.remaining])).toEqual([
      ['search-route', true, false, true, 5],
      ['per-user', true, false, true, 3],
      ['per-ip', true, true, true, 2],
      ['search-route', false, false, true, 0],
      ['per-user', false, false, true, 0],
      ['per-ip', false, true, true, 0],
      ['search-route', false, false, false, 0],
      ['per-user', false, false, false, 0],
      ['per-ip', false, true, false, 0],
    ])
    expect(await counts(registry)).toEqual({
      sluice_decisions_allowed_total: { 'search-route': 1, 'per-user': 1, 'per-ip': 1 },
      sluice_decisions_rejected_total: { 'search-route': 1, 'per-user': 1 },
      sluice_decisions_shadow_rejected_total: { 'per-ip': 1 },
      sluice_store_errors_total: { 'search-route': 3, 'per-user': 3, 'per-ip': 3 },
      sluice_fallback_decisions_total: { 'search-route': 2, 'per-user': 2, 'per-ip': 2 },
    })
  })

  test('without a hook nothing is measured; a bad hook is a ConfigError', async () => {
    const now = jest.spyOn(performance, 'now')
    try {
      const limiter = createRulesLimiter({ rules: RULES, clock: () => T0 })
      for (let i = 0; i < 4; i++)
        await limiter.consume([
          ['user', 'alice'],
          ['ip', '10.0.0.1'],
        ])
      expect(now).not.toHaveBeenCalled()
    } finally {
      now.mockRestore()
    }
    expect(() => createRulesLimiter({ rules: RULES, onDecision: 'log' as never })).toThrow(
      '`onDecision` must be a function receiving each DecisionEvent',
    )
  })
})

describe('HttpLimiter.close()', () => {
  let dir: string
  let file: string
  const yaml = (n: number) =>
    `domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: ${n} }\n`
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-close-'))
    file = join(dir, 'rules.yaml')
    writeFileSync(file, yaml(1))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  test("a watcher passed in stays the caller's: closing the limiter leaves it open", async () => {
    const watcher = watchRules(file, { logger: { warn: () => {} } })
    try {
      const limiter = http({ rules: watcher, descriptors })
      limiter.close()
      limiter.close() // idempotent
      writeFileSync(file, yaml(7))
      expect(await watcher.reload()).toBe(true)
      expect(limiter.rulesLimiter?.rules.rules[0].limit).toMatchObject({ limit: 7 })
    } finally {
      watcher.close()
    }
  })

  test('without rules, close() does nothing', () => {
    expect(() => http({ limit: 5 }).close()).not.toThrow()
  })
})
