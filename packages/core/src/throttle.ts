/**
 * Owns `throttle`: which policies hold a request now (hard, soft, elastic by event-loop spare).
 */
import type { EventLoopUtilization } from 'node:perf_hooks'
import { declareOptions } from './declared-options'
import { invalidOption } from './errors'
import { checkKnownOptions, type SpareProbe, type ThrottleMode } from './options'
import { isWide, MAX_SAFE_PRODUCT, MAX_UNITS, METER_ALGORITHMS, type Policy } from './policy'

export interface EventLoopSpareOptions {
  /**
   * Event-loop utilisation (0..1) under which the system counts as having spare capacity.
   * @default 0.7
   */
  threshold?: number
  /**
   * How often utilisation is re-sampled, in ms; calls in between reuse the last answer.
   * @default 100
   */
  sampleMs?: number
}

/** eventLoopSpare's options, declared once; null takes the default, as `value ?? default` did. */
export const EVENT_LOOP_SPARE_OPTIONS = declareOptions<EventLoopSpareOptions>('eventLoopSpare', {
  threshold: {
    doc: 'event-loop utilisation under which the system has spare capacity',
    default: 0.7,
    check: (value) => {
      if (!((value as number) > 0 && (value as number) <= 1))
        invalidOption('threshold', value, 'a number in (0, 1]')
    },
    orNull: true,
  },
  sampleMs: {
    doc: 'how often utilisation is re-sampled (ms)',
    default: 100,
    check: (value) => {
      if (!((value as number) > 0)) invalidOption('sampleMs', value, 'a positive number of ms')
    },
    orNull: true,
  },
})

/**
 * The default `spare` probe of elastic throttling: true while the event loop was busy less
 * than `threshold` of the time over the last sample. Cheap: one clock read per call.
 */
export function eventLoopSpare(options: EventLoopSpareOptions = {}): SpareProbe {
  const given = EVENT_LOOP_SPARE_OPTIONS.resolve(options)
  const threshold = given.threshold as number
  const sampleMs = given.sampleMs as number
  // The global `performance` (not node:perf_hooks), so importing this runs anywhere; only Node
  // measures the event loop, elsewhere an elastic throttle needs its own `spare`.
  if (typeof globalThis.performance?.eventLoopUtilization !== 'function') {
    invalidOption(
      'throttle.spare',
      undefined,
      'a function here: this runtime has no event-loop utilisation to measure spare capacity by',
    )
  }
  let last: EventLoopUtilization = performance.eventLoopUtilization()
  let lastAt = performance.now()
  let spare = true
  return function eventLoopHasSpare() {
    const now = performance.now()
    if (now - lastAt >= sampleMs) {
      const current = performance.eventLoopUtilization()
      spare = performance.eventLoopUtilization(current, last).utilization < threshold
      last = current
      lastAt = now
    }
    return spare
  }
}

/** The same policy with limit and burst scaled by `factor` (same id: same state). */
function scale(policy: Policy, factor: number): Policy {
  const limit = Math.max(policy.limit, Math.floor(policy.limit * factor))
  const burst = METER_ALGORITHMS.has(policy.algorithm)
    ? Math.max(policy.burst, Math.floor(policy.burst * factor))
    : limit
  return { ...policy, limit, burst }
}

/**
 * Every policy scaled by `factor`. A scaled policy keeps its nominal's id and so its state, so it
 * must keep its arithmetic too: a factor that takes a narrow policy past 2^50 (isWide), where
 * the stores keep state in another form, is refused, as is one past MAX_UNITS.
 */
function scaleAll(
  policies: readonly Policy[],
  factor: number,
  option: string,
  value: number,
): Policy[] {
  return policies.map((policy) => {
    const scaled = scale(policy, factor)
    if (Math.max(scaled.limit, scaled.burst) > MAX_UNITS || isWide(scaled) !== isWide(policy)) {
      const bound = isWide(policy) ? MAX_UNITS : MAX_SAFE_PRODUCT / policy.windowMs
      const most = Math.floor((100 * bound) / Math.max(policy.limit, policy.burst)) / 100
      invalidOption(
        option,
        value,
        `a factor of at most ${most} for '${policy.name}' (scaled, ${isWide(policy) ? 'its limit would pass 2^50' : 'its limit x window would pass 2^50, where its state takes another form'})`,
      )
    }
    return scaled
  })
}

/**
 * Resolves a throttle mode once, at creation, into a function that picks the policies for a
 * call: no allocation per request, the scaled policies are built here.
 */
export function resolveThrottle(
  mode: ThrottleMode | undefined,
  policies: readonly Policy[],
): () => readonly Policy[] {
  if (mode === undefined || mode === 'hard') return () => policies
  if (typeof mode === 'object' && mode !== null && 'soft' in mode) {
    checkKnownOptions(mode, ['soft'], 'throttle { soft }')
    if (typeof mode.soft !== 'number' || !(mode.soft >= 0) || !Number.isFinite(mode.soft)) {
      invalidOption('throttle.soft', mode.soft, 'a fraction >= 0, e.g. 0.1 for 10% over the limit')
    }
    const soft = scaleAll(policies, 1 + mode.soft, 'throttle.soft', mode.soft)
    return () => soft
  }
  if (typeof mode === 'object' && mode !== null && 'elastic' in mode) {
    checkKnownOptions(mode, ['elastic', 'spare'], 'throttle { elastic }')
    if (
      typeof mode.elastic !== 'number' ||
      !(mode.elastic >= 1) ||
      !Number.isFinite(mode.elastic)
    ) {
      invalidOption(
        'throttle.elastic',
        mode.elastic,
        'a factor >= 1, e.g. 2 for up to twice the limit',
      )
    }
    if (mode.spare !== undefined && typeof mode.spare !== 'function') {
      invalidOption('throttle.spare', mode.spare, 'a function returning a boolean')
    }
    const spare = mode.spare ?? eventLoopSpare()
    const elastic = scaleAll(policies, mode.elastic, 'throttle.elastic', mode.elastic)
    return () => (spare() ? elastic : policies)
  }
  return invalidOption(
    'throttle',
    mode,
    "'hard', { soft: fraction } or { elastic: factor, spare? }",
  )
}
