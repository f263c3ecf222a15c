import type { Registry } from 'prom-client'
import { createLimiter, MemoryStore, type LimiterOptions, type Store } from '@sluice/core'

/**
 * A MemoryStore seen as a shared store (not `local`: the limiter takes the paths of Redis and
 * the like), each call going to `memory` unless `overrides` has its own (to watch a call).
 */
export function sharedMemory(overrides: Partial<Store> = {}, memory = new MemoryStore()): Store {
  return {
    consume: (request) => memory.consume(request),
    peek: (request) => memory.peek(request),
    refund: (request) => memory.refund(request),
    reset: (key, policies) => memory.reset(key, policies),
    penalize: (request) => memory.penalize(request),
    block: (request) => memory.block(request),
    ...overrides,
  }
}

/** A limiter on a fresh memory store with a clock the test moves by hand. */
export function limiterAt(start: number, options: LimiterOptions) {
  const clock = { now: start }
  const limiter = createLimiter({ clock: () => clock.now, ...options })
  return { limiter, clock }
}

/** Consumes `n` times and returns the decisions. */
export async function burst(
  limiter: ReturnType<typeof createLimiter>,
  key: string,
  n: number,
  cost = 1,
) {
  const out = []
  for (let i = 0; i < n; i++) out.push(await limiter.consume(key, { cost }))
  return out
}

/** Counter values by metric and policy (or rule) name, read back from a prom-client registry. */
export async function counts(registry: Registry): Promise<Record<string, Record<string, number>>> {
  const out: Record<string, Record<string, number>> = {}
  for (const metric of await registry.getMetricsAsJSON()) {
    if (String(metric.type) !== 'counter') continue
    for (const { labels, value } of metric.values) {
      out[metric.name] ??= {}
      out[metric.name][String(labels.policy)] = value
    }
  }
  return out
}
