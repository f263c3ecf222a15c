/**
 * Owns localTier's options: what they mean, their defaults, and the checks that keep the
 * documented bounds meaningful (see docs/local-tier.md).
 */
import { declareOptions } from '../declared-options'
import { ConfigError, describeValue, invalidOption } from '../errors'
import { checkPositiveInteger } from '../option-checks'
import type { Policy } from '../policy'

export interface LocalTierOptions {
  /**
   * Longest a lease is held, in ms: units still unspent then go back to the shared store. A
   * lease also never outlives its fixed-window window nor its sliding-window bucket. Must not
   * exceed any policy's window (checked when a limiter is created on the tier).
   * @default min(1000, window / 10) per policy
   */
  leaseMs?: number
  /**
   * Largest share of a policy's capacity (`limit`; `burst` for token-bucket and gcra) one
   * lease may take: L = max(1, floor(maxShare x capacity)). Every bound of the tier is a
   * multiple of L (docs/local-tier.md), so it must be above 0 and at most 1: a lease larger than the
   * limit would make them meaningless.
   * @default 0.02
   */
  maxShare?: number
}

export interface TierSettings {
  /** The option as given; undefined: each policy's default. */
  readonly leaseMs: number | undefined
  readonly maxShare: number
  /** How often expired leases are looked for and their unspent units refunded (ms). */
  readonly sweepMs: number
}

/** The most often expired leases are looked for; a lease of leaseMs is refunded within leaseMs / 4 of its end. */
const MAX_SWEEP_MS = 100

function checkMaxShare(value: unknown): void {
  if (typeof value !== 'number' || !(value > 0 && value <= 1)) {
    invalidOption('maxShare', value, 'a number in (0, 1]: a lease may not exceed the limit')
  }
}

/** localTier's options, declared once. */
export const TIER_OPTIONS = declareOptions<LocalTierOptions>('localTier', {
  leaseMs: {
    doc: 'longest a lease is held (ms); default min(1000, window / 10) per policy',
    check: (value, name) => checkPositiveInteger(value, name, 'a positive integer number of ms'),
  },
  maxShare: {
    doc: "largest share of a policy's capacity one lease may take",
    default: 0.02,
    check: checkMaxShare,
  },
})

export function resolveTierOptions(options: LocalTierOptions = {}): TierSettings {
  if (options === null || typeof options !== 'object')
    invalidOption('options', options, 'an object')
  const given = TIER_OPTIONS.resolve(options)
  const leaseMs = given.leaseMs
  // Declared with a default: set whenever the options resolve.
  const maxShare = given.maxShare as number
  const sweepMs = Math.max(1, Math.min(MAX_SWEEP_MS, Math.floor((leaseMs ?? MAX_SWEEP_MS) / 4)))
  return Object.freeze({ leaseMs, maxShare, sweepMs })
}

/**
 * The lease lifetime of one policy: the option, or min(1000, window / 10). Never past the
 * window, even where no limiter checked the policy (createRulesLimiter's rules).
 */
export function leaseMsOf(settings: TierSettings, policy: Policy): number {
  if (settings.leaseMs !== undefined) return Math.min(settings.leaseMs, policy.windowMs)
  return Math.max(1, Math.min(1000, Math.floor(policy.windowMs / 10)))
}

/** The largest lease of one policy, L = max(1, floor(maxShare x capacity)). */
export function maxLeaseOf(settings: TierSettings, policy: Policy): number {
  return Math.max(1, Math.floor(settings.maxShare * policy.burst))
}

/** Refuses a policy whose window is shorter than the lease: a lease must end within its window. */
export function checkLeasePolicy(settings: TierSettings, policy: Policy): void {
  if (settings.leaseMs !== undefined && settings.leaseMs > policy.windowMs) {
    throw new ConfigError(
      `\`leaseMs\` must not exceed the window of policy ${policy.name} (${policy.windowMs} ms): a lease must end within its window; got ${describeValue(settings.leaseMs)}`,
    )
  }
}
