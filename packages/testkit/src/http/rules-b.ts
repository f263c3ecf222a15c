/**
 * Owns the scenarios of rules files: hot reload, onDecision events, watchers, bad options.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import request from 'supertest'
import { type DecisionEvent } from '@sluice/core'
import { fakeClock, captureLogger, sleep, T0, type ScenarioContext } from './harness'
import { descriptors, minute } from './rules-helpers'

export function registerRuleReloadCases(ctx: ScenarioContext): void {
  const { start, harness } = ctx
  test('hot reload: a changed rules file applies between requests', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-rules-'))
    const file = join(dir, 'rules.yaml')
    const yaml = (n: number) =>
      `domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: ${n} }\n`
    writeFileSync(file, yaml(1))
    const logger = captureLogger()
    try {
      const agent = await start({ clock: fakeClock(T0).read, descriptors, rules: file, logger })
      await agent.get('/').set('x-user', 'alice').expect(200)
      await agent.get('/').set('x-user', 'alice').expect(429)
      writeFileSync(
        file,
        'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: fortnight }\n',
      )
      // An invalid version is reported and the old rules stay in force.
      for (let i = 0; i < 100 && logger.warnings.length === 0; i++) await sleep(20)
      expect(logger.warnings[0]).toMatch(/rules not reloaded/)
      await agent.get('/').set('x-user', 'alice').expect(429)
      writeFileSync(file, yaml(3))
      // Probe with fresh users (each counted apart) until the new limit shows.
      let limit: string | undefined
      for (let i = 0; i < 100 && limit !== '3'; i++) {
        await sleep(20)
        limit = (await agent.get('/').set('x-user', `probe-${i}`)).headers['x-ratelimit-limit']
      }
      expect(limit).toBe('3')
      // A changed limit is a new policy: alice counts afresh under it.
      for (const remaining of [2, 1, 0]) {
        const res = await agent.get('/').set('x-user', 'alice').expect(200)
        expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining))
      }
      await agent.get('/').set('x-user', 'alice').expect(429)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('onDecision: one event per matched rule per request, shadow rules included', async () => {
    const events: DecisionEvent[] = []
    const agent = await start({
      clock: fakeClock(T0).read,
      descriptors,
      rules: {
        domain: 'api',
        descriptors: [
          { key: 'route', value: '/', name: 'root', rate_limit: minute(3) },
          { key: 'user', name: 'per-user', rate_limit: minute(2) },
          {
            key: 'route',
            value: '/bad',
            name: 'bad-shadow',
            rate_limit: minute(1),
            shadow_mode: true,
          },
        ],
      },
      onDecision: (event) => void events.push(event),
    })
    await agent.get('/').set('x-user', 'alice').expect(200)
    await agent.get('/').set('x-user', 'alice').expect(200)
    await agent.get('/').set('x-user', 'alice').expect(429) // per-user rejects
    await agent.get('/').set('x-user', 'bob').expect(200) // the route's 3rd
    await agent.get('/').set('x-user', 'carol').expect(429) // the route rejects
    await agent.get('/bad').expect(400) // the shadow rule admits
    await agent.get('/bad').expect(400) // the shadow rule would reject: not blocked
    const tally: Record<string, Record<string, number>> = {}
    for (const event of events) {
      const outcome = event.allowed ? 'allowed' : event.shadow ? 'shadowRejected' : 'rejected'
      tally[event.policy] ??= {}
      tally[event.policy][outcome] = (tally[event.policy][outcome] ?? 0) + 1
    }
    expect(tally).toEqual({
      root: { allowed: 4, rejected: 1 },
      'per-user': { allowed: 4, rejected: 1 },
      'bad-shadow': { allowed: 1, shadowRejected: 1 },
    })
    expect(events.filter((e) => e.shadow).map((e) => e.key)).toEqual([
      'api|route=/bad',
      'api|route=/bad',
    ])
  })

  test('closing the app closes the watcher of a rules file path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-rules-'))
    const file = join(dir, 'rules.yaml')
    const invalid = (unit: string) =>
      `domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: ${unit} }\n`
    writeFileSync(
      file,
      'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
    )
    const logger = captureLogger()
    try {
      const app = await harness.start({ descriptors, rules: file, logger })
      await request(app.server).get('/').set('x-user', 'alice').expect(200)
      // The watcher is live: an invalid version is reported.
      writeFileSync(file, invalid('fortnight'))
      for (let i = 0; i < 100 && logger.warnings.length === 0; i++) await sleep(20)
      expect(logger.warnings).toHaveLength(1)
      await app.close()
      // Closed: another invalid version goes unread (the debounce is 100 ms).
      writeFileSync(file, invalid('decade'))
      await sleep(300)
      expect(logger.warnings).toHaveLength(1)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('bad rules options fail at start-up with a ConfigError naming them', async () => {
    const rules = { domain: 'api', descriptors: [{ key: 'user', rate_limit: minute(1) }] }
    await expect(harness.start({ rules })).rejects.toThrow(
      /`descriptors` must be a function .* when `rules` is given; got undefined/,
    )
    await expect(harness.start({ descriptors })).rejects.toThrow(
      /`descriptors` must be unset unless `rules` is given/,
    )
    await expect(harness.start({ rules, descriptors, limit: 5 })).rejects.toThrow(
      /`limit` must be unset when `rules` is given/,
    )
    await expect(
      harness.start({
        rules: { domain: 'api', descriptors: [{ key: 'user', rate_limits: {} }] } as never,
        descriptors,
      }),
    ).rejects.toThrow(/unknown key `rate_limits` in `descriptors\[0\]`/)
  })
}
