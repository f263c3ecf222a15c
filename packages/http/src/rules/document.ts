/**
 * Owns the shape of a rules document (Lyft ratelimit descriptors plus Sluice's extensions): plain
 * types, so that the pipeline can take a document without loading its schema (@sluice/rules).
 */
import type { AlgorithmName } from '@sluice/core/web'
import type { RuleUnit } from './units'

/** The limit of one descriptor. */
export interface RateLimitConfig {
  /** The window: one `second`, `minute`, `hour` or `day`. */
  unit: RuleUnit
  /** Requests (cost units) allowed per unit; a positive integer. */
  requests_per_unit: number
  /**
   * Sluice extension: the algorithm that counts (see docs/algorithms.md).
   * @default 'sliding-window'
   */
  algorithm?: AlgorithmName
  /**
   * Sluice extension, token-bucket, leaky-bucket and gcra only: requests a rested client may
   * make at once.
   * @default requests_per_unit
   */
  burst?: number
}

/** One node of the descriptor tree: matches one `[key, value]` entry of a request. */
export interface DescriptorConfig {
  /** The entry key this descriptor matches, e.g. `route` or `user`. */
  key: string
  /**
   * Matches only this value. Without it the descriptor matches any value of `key`, and counts
   * each value apart (a per-user limit). A value beats a bare key: the most specific wins.
   * @default undefined (any value)
   */
  value?: string
  /** The limit applied when a request's entries reach this descriptor. */
  rate_limit?: RateLimitConfig
  /**
   * Exempts requests that reach this descriptor from it: with a `value`, it lifts the limit of
   * the bare-key sibling (e.g. an unlimited `user: admin` beside a per-user limit).
   * @default false
   */
  unlimited?: boolean
  /**
   * Decide and report, never block, for this descriptor's `rate_limit`.
   * @default false
   */
  shadow_mode?: boolean
  /**
   * The rule's name in metrics, headers and `sluice check-rules`.
   * @default the Lyft-style path, e.g. 'api.route_/login.user'
   */
  name?: string
  /** Nested descriptors: match the entries that follow this one in the request. */
  descriptors?: DescriptorConfig[]
}

/** A rules file: one domain and its descriptor tree (Lyft ratelimit's configuration shape). */
export interface RulesDocument {
  /** Namespace of the rules; part of every state key, so two domains never share counts. */
  domain: string
  /** The top-level descriptors. */
  descriptors: DescriptorConfig[]
}
