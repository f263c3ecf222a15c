/**
 * Owns @fastify/rate-limit's option defaults: an unusable value falls back to the default, as
 * the peer does (Sluice's main entry rejects it instead), and a route's options merge over the
 * plugin's.
 */
import { parseDuration } from '@sluice/core'
import type {
  HeaderLabels,
  PerRequest,
  RateLimitOptions,
  RateLimitParams,
  RateLimitPluginOptions,
} from './types'

export const DEFAULT_MAX = 1000
export const DEFAULT_TIME_WINDOW = 60_000
export const DEFAULT_IPV6_SUBNET = 64

const LEGACY_LABELS: HeaderLabels = {
  rateLimit: 'x-ratelimit-limit',
  rateRemaining: 'x-ratelimit-remaining',
  rateReset: 'x-ratelimit-reset',
  retryAfter: 'retry-after',
}

const DRAFT_LABELS: HeaderLabels = {
  rateLimit: 'ratelimit-limit',
  rateRemaining: 'ratelimit-remaining',
  rateReset: 'ratelimit-reset',
  retryAfter: 'retry-after',
}

function wholeAtLeastZero(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
    ? Math.trunc(value)
    : undefined
}

function maxOf(value: unknown): number | PerRequest<number> {
  if (typeof value === 'function') return value as PerRequest<number>
  return wholeAtLeastZero(value) ?? DEFAULT_MAX
}

function timeWindowOf(value: unknown): number | PerRequest<number> {
  if (typeof value === 'function') return value as PerRequest<number>
  if (typeof value === 'string') {
    try {
      return parseDuration(value, 'timeWindow')
    } catch {
      return DEFAULT_TIME_WINDOW
    }
  }
  return wholeAtLeastZero(value) ?? DEFAULT_TIME_WINDOW
}

function ipv6SubnetOf(value: unknown): number {
  const subnet = wholeAtLeastZero(value)
  return subnet !== undefined && subnet <= 128 ? subnet : DEFAULT_IPV6_SUBNET
}

/** The plugin's options with every default applied, once at register. */
export function pluginParams(options: RateLimitPluginOptions): RateLimitParams {
  const labels = options.enableDraftSpec === true ? DRAFT_LABELS : LEGACY_LABELS
  return resolveParams({
    ...options,
    allowList: options.allowList ?? options.whitelist,
    global: typeof options.global === 'boolean' ? options.global : true,
    enableDraftSpec: options.enableDraftSpec === true,
    labels,
    hook: options.hook ?? 'onRequest',
    addHeaders: {
      [labels.rateLimit]: true,
      [labels.rateRemaining]: true,
      [labels.rateReset]: true,
      [labels.retryAfter]: true,
      ...options.addHeaders,
    },
    addHeadersOnExceeding: {
      [labels.rateLimit]: true,
      [labels.rateRemaining]: true,
      [labels.rateReset]: true,
      ...options.addHeadersOnExceeding,
    },
    continueExceeding: options.continueExceeding === true,
    exponentialBackoff: options.exponentialBackoff === true,
    skipOnError: options.skipOnError === true,
    routeInfo: {},
  })
}

/** A route's (or a decorator's) options over the plugin's; a bad `groupId` throws at once. */
export function mergeParams(
  base: RateLimitParams,
  options: RateLimitOptions,
  routeInfo: RateLimitParams['routeInfo'],
): RateLimitParams {
  if (options.groupId !== undefined && typeof options.groupId !== 'string')
    throw new Error('groupId must be a string')
  return resolveParams({ ...base, ...options, routeInfo })
}

type Unresolved = Omit<RateLimitParams, 'max' | 'timeWindow' | 'ban' | 'ipv6Subnet'> &
  Pick<RateLimitOptions, 'max' | 'timeWindow' | 'ban' | 'ipv6Subnet'>

function resolveParams(params: Unresolved): RateLimitParams {
  return {
    ...params,
    max: maxOf(params.max),
    timeWindow: timeWindowOf(params.timeWindow),
    ban: wholeAtLeastZero(params.ban) ?? -1,
    ipv6Subnet: ipv6SubnetOf(params.ipv6Subnet),
  }
}
