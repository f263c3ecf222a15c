/**
 * Owns the adapters' options, declared once (HttpLimitOptions): each option's doc line, default
 * and own check; the pipeline's resolver (resolve.ts) checks the rest together.
 */
import { declareOptions, LIMITER_OPTIONS } from '@sluice/core/web'
import { checkBoolean, checkFunction } from './checks'
import type { HttpLimitOptions } from './types'

const limiter = LIMITER_OPTIONS.table
const aFunction = (value: unknown, name: string) => checkFunction(value, name)
const aBoolean = (value: unknown, name: string) => checkBoolean(value, name)

export const HTTP_OPTIONS = declareOptions<HttpLimitOptions>('rateLimit', {
  limit: { doc: 'requests per window, or a function of the request and its key', default: 100 },
  window: { doc: 'window length, or a function of the request and its key', default: '1m' },
  algorithm: limiter.algorithm,
  burst: limiter.burst,
  precision: limiter.precision,
  anchor: limiter.anchor,
  limits: limiter.limits,
  throttle: limiter.throttle,
  cost: { doc: 'cost units a request takes, or a function of the request', default: 1 },
  key: { doc: "the request's key; default: its client IP", check: aFunction },
  onBadKey: { doc: 'a `key` result that is no key', default: 'ip' },
  ipv6Subnet: { doc: 'IPv6 prefix the default key groups by, or false', default: 64 },
  store: limiter.store,
  clock: limiter.clock,
  prefix: limiter.prefix,
  skip: { doc: 'requests it returns true for are not limited', check: aFunction },
  allowList: { doc: 'never limited: IPs, CIDR ranges or keys, or a function' },
  denyList: { doc: 'always refused with 403: IPs, CIDR ranges or keys, or a function' },
  skipSuccessfulRequests: {
    doc: "give back the request's cost when the response succeeds",
    default: false,
    check: aBoolean,
  },
  skipFailedRequests: {
    doc: "give back the request's cost when the response fails",
    default: false,
    check: aBoolean,
  },
  requestWasSuccessful: { doc: 'decides success for the two above', check: aFunction },
  statusCode: { doc: 'status of a rejection', default: 429 },
  message: { doc: "the rejection's message or body" },
  onLimited: { doc: 'called for every rejected request', check: aFunction },
  ban: { doc: 'rejections in a row before further ones get 403' },
  backoff: { doc: "what each rejection adds to the key's wait: 'restart' or 'double'" },
  countRefusals: { doc: "count each key's rejections in a row", check: aBoolean },
  standardHeaders: { doc: 'IETF RateLimit fields: a draft, or true for draft-6', default: false },
  legacyHeaders: { doc: '`X-RateLimit-*` fields', default: true, check: aBoolean },
  retryAfterHeader: {
    doc: '`Retry-After` on rejections',
    default: true,
    orNull: true,
    check: aBoolean,
  },
  onStoreError: limiter.onStoreError,
  shadow: limiter.shadow,
  timeoutMs: limiter.timeoutMs,
  breaker: limiter.breaker,
  maxInFlight: limiter.maxInFlight,
  logger: { doc: 'receives warnings, store outage lines and rules reload news; default: console' },
  onDecision: limiter.onDecision,
  concurrency: limiter.concurrency,
  topRefused: limiter.topRefused,
  rules: { doc: 'limits from rules instead of `limit`/`limits`' },
  descriptors: { doc: "with `rules`: the request's descriptor entries", check: aFunction },
  queue: { doc: 'hold a request for its slot instead of 429, up to `maxWaitMs`' },
  maxDelayMs: { doc: 'leaky-bucket shaping: the longest hold', default: 30_000 },
  maxHolds: { doc: 'leaky-bucket shaping: requests held at once', default: 10_000 },
})

/** The option names every adapter knows. */
export const HTTP_OPTION_NAMES = HTTP_OPTIONS.names
