/**
 * Owns the rate-limit response headers: legacy X-RateLimit-*, the IETF drafts 6 to 10, Retry-After,
 * and the rounding that makes them agree.
 */
import { type Decision, type PolicyDecision, invalidOption, type Policy } from '@sluice/core/web'
import { checkHeaderName, sfString } from './structured'

/** Versions of the IETF httpapi-ratelimit-headers draft the adapters can write. */
export type StandardHeadersDraft = 'draft-6' | 'draft-7' | 'draft-8' | 'draft-10'

export const STANDARD_HEADER_DRAFTS: readonly StandardHeadersDraft[] = [
  'draft-6',
  'draft-7',
  'draft-8',
  'draft-10',
]

/**
 * How `X-RateLimit-Reset` is written, as each framework's popular limiter writes it:
 * `'epoch'` Unix epoch seconds (express-rate-limit, koa-ratelimit), `'delta'` seconds from now
 * (@fastify/rate-limit).
 */
export type ResetStyle = 'epoch' | 'delta'

/** Names of the legacy headers (Koa's `headers` option renames them). */
export interface LegacyHeaderNames {
  limit: string
  remaining: string
  reset: string
  retryAfter: string
}

export const DEFAULT_LEGACY_NAMES: Readonly<LegacyHeaderNames> = {
  limit: 'X-RateLimit-Limit',
  remaining: 'X-RateLimit-Remaining',
  reset: 'X-RateLimit-Reset',
  retryAfter: 'X-RateLimit-Retry-After',
}

export interface HeaderOptions {
  /** Legacy `X-RateLimit-*` headers: their names, or `false` for none. */
  legacy: LegacyHeaderNames | false
  /** IETF fields, or `false` for none. */
  standard: StandardHeadersDraft | false
  resetStyle: ResetStyle
  /** Whether rejections carry `Retry-After`. */
  retryAfter: boolean
  /** Lower-case names left out of admitted responses (Fastify `addHeadersOnExceeding`). */
  omitWhenAllowed?: readonly string[]
  /** Lower-case names left out of rejections (Fastify `addHeaders`). */
  omitWhenRejected?: readonly string[]
}

/** Header name and value pairs, in the order they should be set. */
export type HeaderList = Array<readonly [name: string, value: string]>

/** The seconds every header of one response agrees on. */
export interface ResponseTimes {
  /** Seconds until the binding policy's quota is back, as the standard fields announce it. */
  resetSeconds: number
  /** What `X-RateLimit-Reset` says (epoch seconds or seconds, by `resetStyle`). */
  legacyReset: number
  /** `Retry-After` in whole seconds (rejections only; 0 when admitted, or when it can never pass). */
  retryAfterSeconds: number
}

/** ms until a rejected policy lets a request of this cost through; its window when it never will. */
function waitMs(outcome: PolicyDecision | Decision, policy: Policy): number {
  const wait = Number.isFinite(outcome.retryAfterMs) ? outcome.retryAfterMs : policy.windowMs
  return Math.max(1, wait)
}

/** The reset a policy announces: when admitted, when its quota is full again; when rejected, when it admits again. */
function announcedResetMs(outcome: PolicyDecision | Decision, policy: Policy): number {
  return outcome.allowed ? outcome.resetMs : waitMs(outcome, policy)
}

/**
 * Rounds once, so the headers of a response agree: `Retry-After` is whole seconds rounded up and
 * never earlier than the reset the other headers announce (an epoch reset rounds up to the next
 * second, so Retry-After counts to that second).
 */
export function responseTimes(
  decision: Decision,
  now: number,
  resetStyle: ResetStyle,
  into?: ResponseTimes,
): ResponseTimes {
  const resetMs = announcedResetMs(decision, decision.policy)
  const resetSeconds = Math.ceil(resetMs / 1000)
  const epochReset = Math.ceil((now + resetMs) / 1000)
  const legacyReset = resetStyle === 'epoch' ? epochReset : resetSeconds
  let retryAfterSeconds = 0
  // A request that can never pass (its cost is over the capacity) gets no Retry-After at all.
  if (!decision.allowed && Number.isFinite(decision.retryAfterMs)) {
    // Not before the epoch reset announced beside it; but an answer made without the store
    // ('deny') has no real reset, and says exactly what it documents: retry in 1 s.
    retryAfterSeconds =
      resetStyle === 'epoch' && !decision.degraded
        ? Math.max(resetSeconds, Math.ceil((epochReset * 1000 - now) / 1000))
        : resetSeconds
  }
  if (into === undefined) return { resetSeconds, legacyReset, retryAfterSeconds }
  // Filled in place: an admitted request's times are read by the header writer at once and
  // kept by nothing, so one object per pipeline serves them all (no allocation per request).
  into.resetSeconds = resetSeconds
  into.legacyReset = legacyReset
  into.retryAfterSeconds = retryAfterSeconds
  return into
}

function windowSeconds(policy: Policy): number {
  return Math.ceil(policy.windowMs / 1000)
}

/** A `RateLimit-Policy` value and the policies it lists, in order. */
interface PolicyField {
  readonly policies: readonly Policy[]
  readonly field: string
}

/**
 * Policy fields, by the first policy of a decision: a limiter's policies are fixed, but with
 * `rules` requests that share a first rule may match different rules after it, so each list is
 * kept with the policies it was made of and used only for those.
 */
const draft6Policies = new WeakMap<Policy, PolicyField[]>()
const draft8Policies = new WeakMap<Policy, PolicyField[]>()

function sameListed(known: PolicyField, outcomes: readonly PolicyDecision[]): boolean {
  if (known.policies.length !== outcomes.length) return false
  for (let i = 0; i < outcomes.length; i++)
    if (known.policies[i] !== outcomes[i].policy) return false
  return true
}

function policyField(decision: Decision, named: boolean): string {
  const cache = named ? draft8Policies : draft6Policies
  const outcomes = decision.policies
  const first = outcomes[0].policy
  let known = cache.get(first)
  if (known === undefined) {
    known = []
    cache.set(first, known)
  }
  for (const entry of known) if (sameListed(entry, outcomes)) return entry.field
  const field = outcomes.map(({ policy }) => policyItem(policy, named)).join(', ')
  // Bounded: the lists a first rule meets are its rule tree's few combinations.
  if (known.length < 64) known.push({ policies: outcomes.map(({ policy }) => policy), field })
  return field
}

/** One policy's item in `RateLimit-Policy`. */
function policyItem(policy: Policy, named: boolean): string {
  // A concurrency limit has a quota unit and no window (IETF draft: concurrent-requests).
  if (policy.kind === 'concurrency') {
    const unit = 'qu="concurrent-requests"'
    return named ? `${sfString(policy.name)};q=${policy.limit};${unit}` : `${policy.limit};${unit}`
  }
  return named
    ? `${sfString(policy.name)};q=${policy.limit};w=${windowSeconds(policy)}`
    : `${policy.limit};w=${windowSeconds(policy)}`
}

/** `RateLimit` of draft-8 and later: one item per policy. The binding one uses the shared reset. */
function draft8State(decision: Decision, times: ResponseTimes): string {
  let field = ''
  for (const outcome of decision.policies) {
    const t =
      outcome.policy === decision.policy
        ? times.resetSeconds
        : Math.ceil(announcedResetMs(outcome, outcome.policy) / 1000)
    if (field !== '') field += ', '
    field += `${sfString(outcome.policy.name)};r=${outcome.remaining}`
    // Free slots have no reset time.
    if (outcome.policy.kind !== 'concurrency') field += `;t=${t}`
  }
  return field
}

/** Checks header options once, at start-up. */
export function checkStandardHeaders(
  value: unknown,
  option = 'standardHeaders',
): StandardHeadersDraft | false {
  if (value === undefined || value === false) return false
  // express-rate-limit's `true` means draft-6.
  if (value === true) return 'draft-6'
  if (!STANDARD_HEADER_DRAFTS.includes(value as StandardHeadersDraft)) {
    invalidOption(
      option,
      value,
      `false, true or one of ${STANDARD_HEADER_DRAFTS.map((d) => `'${d}'`).join(', ')}`,
    )
  }
  return value as StandardHeadersDraft
}

/**
 * Compiles the header options into a writer: `(decision, times) => headers`, `times` from
 * `responseTimes` (so the body's `retryAfter` and the headers agree). Options are read here once;
 * the writer only formats numbers.
 */
export function createHeaderWriter(
  options: HeaderOptions,
): (decision: Decision, times: ResponseTimes) => HeaderList {
  const { legacy, standard, retryAfter } = options
  if (legacy !== false) {
    for (const [role, name] of Object.entries(legacy))
      checkHeaderName(name, `header name (${role})`)
  }
  const allowedSkip = new Set(options.omitWhenAllowed?.map((name) => name.toLowerCase()))
  const rejectedSkip = new Set(options.omitWhenRejected?.map((name) => name.toLowerCase()))
  const filter = allowedSkip.size > 0 || rejectedSkip.size > 0

  // The last limit's text: a limiter's limit rarely changes from one response to the next.
  let lastLimit = -1
  let lastLimitText = ''
  const limitText = (limit: number): string => {
    if (limit !== lastLimit) {
      lastLimitText = String(limit)
      lastLimit = limit
    }
    return lastLimitText
  }

  return function rateLimitHeaders(decision, times) {
    // A literal (not pushes onto []) for the common case: one allocation of the right size.
    const headers: HeaderList =
      legacy === false
        ? []
        : [
            [legacy.limit, limitText(decision.limit)],
            [legacy.remaining, String(decision.remaining)],
            [legacy.reset, String(times.legacyReset)],
          ]
    if (standard === 'draft-6') {
      headers.push(
        ['RateLimit-Policy', policyField(decision, false)],
        ['RateLimit-Limit', String(decision.limit)],
        ['RateLimit-Remaining', String(decision.remaining)],
        ['RateLimit-Reset', String(times.resetSeconds)],
      )
    } else if (standard === 'draft-7') {
      headers.push(
        ['RateLimit-Policy', policyField(decision, false)],
        [
          'RateLimit',
          `limit=${decision.limit}, remaining=${decision.remaining}, reset=${times.resetSeconds}`,
        ],
      )
    } else if (standard !== false) {
      headers.push(
        ['RateLimit-Policy', policyField(decision, true)],
        ['RateLimit', draft8State(decision, times)],
      )
    }
    if (!decision.allowed && times.retryAfterSeconds > 0) {
      if (retryAfter) headers.push(['Retry-After', String(times.retryAfterSeconds)])
      if (legacy !== false) headers.push([legacy.retryAfter, String(times.retryAfterSeconds)])
    }
    if (!filter) return headers
    const skip = decision.allowed ? allowedSkip : rejectedSkip
    return headers.filter(([name]) => !skip.has(name.toLowerCase()))
  }
}
