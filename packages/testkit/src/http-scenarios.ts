/**
 * Owns the HTTP suite every adapter passes: the same scenarios over Express, Fastify, Koa, and
 * the Fetch adapters (@sluice/fetch, @sluice/hono, served by @hono/node-server: see
 * ./http/fetch-harness.ts) (DESIGN.md, "HTTP behaviour"), through supertest. The scenarios are
 * in ./http, one file per concern; the harness and helpers in ./http/harness.ts. A scenario that
 * cannot apply to an adapter says so where it branches (`harness.proxyTrust`).
 */
import { registerClientIpCases } from './http/client-ip'
import { registerConcurrencyCases } from './http/concurrency'
import { openScenarios, type AdapterHarness } from './http/harness'
import { registerHeaderCases } from './http/headers'
import { registerLimitCases } from './http/limits'
import { registerQueueCases } from './http/queue'
import { registerRedisCases } from './http/redis'
import { registerRefundCases } from './http/refunds'
import { registerResponseCases } from './http/responses'
import { registerRuleCases } from './http/rules-a'
import { registerRuleReloadCases } from './http/rules-b'
import { registerShapingCases } from './http/shaping'
import { registerStoreErrorCases } from './http/store-errors'

export {
  captureLogger,
  FailingStore,
  fakeClock,
  listen,
  type AdapterHarness,
  type ScenarioApp,
  type ScenarioOptions,
  type ScenarioSetup,
} from './http/harness'

/** Registers the shared HTTP behaviour for one adapter. */
export function runHttpScenarios(harness: AdapterHarness): void {
  const ctx = openScenarios(harness)
  describe(`${harness.name}: shared HTTP behaviour`, () => {
    registerLimitCases(ctx)
    registerClientIpCases(ctx)
    registerHeaderCases(ctx)
    registerResponseCases(ctx)
    registerRefundCases(ctx)
    registerStoreErrorCases(ctx)
    registerShapingCases(ctx)
    describe('rules and descriptors', () => {
      registerRuleCases(ctx)
      registerRuleReloadCases(ctx)
    })
    describe('queue: hold instead of 429', () => registerQueueCases(ctx))
    describe('concurrency: slots released when the response closes', () =>
      registerConcurrencyCases(ctx))
    describe('over a Redis store (a real redis-server): decided when the store answers', () =>
      registerRedisCases(ctx))
  })
}
export {
  fetchScenarioOptions,
  scenarioIp,
  serveFetch,
  type NodeBindings,
} from './http/fetch-harness'
