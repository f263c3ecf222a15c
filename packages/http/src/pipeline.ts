/**
 * Owns the per-request path every adapter shares: skip, key, lists, the one store call, headers,
 * refunds, shaping holds and the verdict. Options are resolved before (resolve.ts); what a
 * refused request is answered with is in rejections.ts.
 */
// Types only: nothing of Node's is loaded at run time (see web.ts).
import {
  type DirectConsume,
  type Limiter,
  type Decision,
  type WaitUntil,
  SluiceError,
  checkPositiveInteger,
} from '@sluice/core/web'
import type { RulesDecision } from './rules/limiter'
import { backoffMs, nothingPasses, waitingFor } from './backoff'
import { responseTimes, type HeaderList, type ResponseTimes } from './headers'
import { keyFromResult } from './key-result'
import { closing, holdSignal, releaseOnClose } from './response-close'
import { boundKey, type RequestLike } from './keys'
import type { ResolvedHttp } from './resolve'
import type {
  AllowVerdict,
  Awaitable,
  HttpCheck,
  HttpVerdict,
  PassVerdict,
  RejectVerdict,
  ResponseLike,
} from './types'

export { refusePeerNames, type PeerNames } from './checks'
export { HTTP_OPTION_NAMES } from './options'
export type {
  AllowVerdict,
  FrameworkDefaults,
  HttpCheck,
  HttpLimitOptions,
  HttpLimiter,
  HttpVerdict,
  PassVerdict,
  RateLimitMessage,
  RejectVerdict,
  RequestList,
  ResponseLike,
} from './types'

const PASS: PassVerdict = { action: 'pass' }

/** The store call's outcome as `conclude` needs it. */
interface Counted {
  readonly key: string
  readonly units: number
  readonly decision: Decision
  /** The hold of a queued request (`queue`), already waited for. */
  readonly held: { signal: AbortSignal } | undefined
  readonly rules: RulesDecision | undefined
  readonly limiter: Limiter | undefined
  /** With a skip option: the response's close, watched since the request came in. */
  readonly closed: Promise<void> | undefined
}

/** One adapter's pipeline over its resolved options. */
export class Pipeline<Req extends RequestLike, Res extends ResponseLike> {
  /** An admitted request's header times, filled in place per request (see responseTimes). */
  private readonly admittedTimes: ResponseTimes = {
    resetSeconds: 0,
    legacyReset: 0,
    retryAfterSeconds: 0,
  }
  /** The common configuration's store call without an async frame (see `fast`). */
  private readonly consumeDirect: DirectConsume | undefined
  /**
   * The common configuration (IP key, fixed limit and cost, no option that may be async) is
   * decided without an async frame: on an in-process store without a promise either, on any
   * other store through the store call's promise alone.
   */
  readonly fast: boolean

  constructor(private readonly r: ResolvedHttp<Req, Res>) {
    this.consumeDirect = r.fixedDirect
    this.fast =
      this.consumeDirect !== undefined &&
      typeof r.cost === 'number' &&
      r.skip === undefined &&
      r.key === undefined &&
      r.inAllowList === undefined &&
      r.inDenyList === undefined &&
      r.maxWaitMs === undefined &&
      r.rules === undefined
  }

  /**
   * decide for the fast-path configuration: the same steps as decideAsync, without awaits.
   * `waitUntil` (HttpLimiter.decide) goes to the store call as is: nothing is built without one.
   */
  readonly decideFast = (req: Req, res: Res, waitUntil?: WaitUntil): Awaitable<HttpVerdict> => {
    const r = this.r
    if (r.proxy.armed) r.proxy.check(req)
    const key = boundKey(r.keyByIp(req))
    const units = r.cost as number
    const closed = r.refunds ? closing(res) : undefined
    const decision = this.consumeDirect!(key, units, waitUntil)
    // The `then` test written here, not through isPromise: this site's own type feedback sees
    // a Decision alone, so V8 answers it without a lookup along the prototype chain.
    if (typeof (decision as { then?: unknown }).then === 'function') {
      return (decision as Promise<Decision>).then((settled) =>
        this.conclude(req, res, this.counted(key, units, settled, closed)),
      )
    }
    const settled = decision as Decision
    // Admitted with nothing to follow (no refund to watch, no hold, no slot, no refusals kept):
    // the verdict at once, without the count's record that conclude reads.
    if (
      settled.allowed &&
      closed === undefined &&
      settled.delayMs === 0 &&
      settled.slot === undefined &&
      r.refusals === undefined
    ) {
      return this.allowVerdict(settled, key)
    }
    return this.conclude(req, res, this.counted(key, units, settled, closed))
  }

  /** A fast-path request's count: one limiter, no holds, no rules. */
  private counted(
    key: string,
    units: number,
    decision: Decision,
    closed: Promise<void> | undefined,
  ): Counted {
    return {
      key,
      units,
      decision,
      held: undefined,
      rules: undefined,
      limiter: this.r.fixed,
      closed,
    }
  }

  /** skip, key and lists: the request's key, or the verdict that settles it uncounted. */
  private async keyOf(req: Req): Promise<string | PassVerdict | RejectVerdict> {
    const r = this.r
    if (r.skip !== undefined && (await r.skip(req))) return PASS
    const given = r.key === undefined ? undefined : await r.key(req)
    if (given === false) return PASS
    const named = given === undefined ? undefined : (keyFromResult(given) ?? r.badKey(given, req))
    const key = boundKey(named === undefined ? r.keyByIp(req) : named)
    if (r.inAllowList !== undefined && (await r.inAllowList(req, key))) return PASS
    if (r.inDenyList !== undefined && (await r.inDenyList(req, key)))
      return r.rejections.denied(key)
    return key
  }

  readonly decideAsync = async (
    req: Req,
    res: Res,
    waitUntil?: WaitUntil,
  ): Promise<HttpVerdict> => {
    const r = this.r
    if (r.proxy.armed) r.proxy.check(req)
    const closed = r.refunds ? closing(res) : undefined
    const key = await this.keyOf(req)
    if (typeof key !== 'string') return key
    const units =
      typeof r.cost === 'function' ? checkPositiveInteger(await r.cost(req), 'cost') : r.cost
    // queue: the client leaving while its request is held aborts the wait (the slot goes back).
    const held = r.maxWaitMs === undefined ? undefined : holdSignal(res)
    let counted: Counted | undefined
    if (held !== undefined) r.holds.waiting++
    try {
      counted = await this.count(req, key, units, held, closed, waitUntil)
    } catch (error) {
      if (held?.signal.aborted) return r.rejections.aborted(key)
      throw error
    } finally {
      if (held !== undefined) r.holds.waiting--
      held?.release()
    }
    return counted === undefined ? PASS : this.conclude(req, res, counted)
  }

  /**
   * The one store call: through the rules, or the request's limiter; waits when queued.
   * `waitUntil` keeps a timed-out call's late reply and refund running (ConsumeOptions).
   */
  private async count(
    req: Req,
    key: string,
    units: number,
    held: { signal: AbortSignal } | undefined,
    closed: Promise<void> | undefined,
    waitUntil: WaitUntil | undefined,
  ): Promise<Counted | undefined> {
    const r = this.r
    if (r.rules !== undefined) {
      const entries = await r.rules.descriptors(req)
      const result: RulesDecision =
        held === undefined
          ? await r.rules.limiter.consume(entries, { cost: units, waitUntil })
          : await r.rules.limiter.wait(entries, {
              cost: units,
              maxWaitMs: r.maxWaitMs!,
              signal: held.signal,
              waitUntil,
            })
      if (result.decision === undefined) return undefined
      return {
        key,
        units,
        decision: result.decision,
        held,
        rules: result,
        limiter: undefined,
        closed,
      }
    }
    const tier = r.fixed === undefined ? await r.tiers!.tierOf(req, key) : undefined
    const limiter = r.fixed ?? tier!.limiter
    const decision = tier?.refusesAll
      ? nothingPasses(limiter.policies[0]!, limiter.clock())
      : held === undefined
        ? await limiter.consume(key, { cost: units, waitUntil })
        : await limiter.wait(key, {
            cost: units,
            maxWaitMs: r.maxWaitMs,
            signal: held.signal,
            waitUntil,
          })
    return { key, units, decision, held, rules: undefined, limiter, closed }
  }

  /** The request's key and state under its limit, counting nothing (see HttpLimiter.check). */
  readonly check = async (req: Req): Promise<HttpCheck | undefined> => {
    const r = this.r
    if (r.rules !== undefined) {
      throw new SluiceError(
        'ERR_SLUICE_UNSUPPORTED',
        'check() reads `limit` or `limits`, not `rules`',
      )
    }
    const key = await this.keyOf(req)
    if (typeof key !== 'string') return undefined
    const tier = r.fixed === undefined ? await r.tiers!.tierOf(req, key) : undefined
    const limiter = r.fixed ?? tier!.limiter
    const decision = tier?.refusesAll
      ? nothingPasses(limiter.policies[0]!, limiter.clock())
      : await limiter.peek(key)
    return { key, decision, refusals: r.refusals?.read(key, decision.at) ?? 0 }
  }

  /** What follows the store call: headers, refund tracking, shaping, onLimited, ban and body. */
  private conclude(req: Req, res: Res, counted: Counted): Awaitable<HttpVerdict> {
    const r = this.r
    const { key, decision } = counted
    if (decision.slot !== undefined) releaseOnClose(res, decision.slot)
    if (decision.allowed) {
      r.refusals?.clear(key)
      const verdict = this.allowVerdict(decision, key)
      // leaky-bucket shaping: hold the request so output leaves at the configured rate (a
      // queued request was already held for its slot).
      if (counted.held === undefined && decision.delayMs > 0) {
        return this.shape(req, res, counted, this.refundOf(counted), verdict)
      }
      // The refund is built only where a charge may go back (a skip option): none per request else.
      if (counted.closed !== undefined) {
        const refund = this.refundOf(counted)
        counted.closed.then(() => this.settle(req, res, key, refund))
      }
      return verdict
    }
    const refusals = r.refusals?.add(key, decision.at, decision.policy.windowMs) ?? 0
    if (r.backoff !== undefined && !decision.degraded && counted.limiter !== undefined) {
      return this.backOff(counted, refusals).then((held) =>
        this.refuse(req, held, counted, refusals),
      )
    }
    return this.refuse(req, decision, counted, refusals)
  }

  /** An admitted request's verdict: its headers, at the instant the limiter decided. */
  private allowVerdict(decision: Decision, key: string): AllowVerdict {
    // decision.at: exact for refunds, and no second clock read.
    const times = responseTimes(decision, decision.at, this.r.resetStyle, this.admittedTimes)
    const headers = this.r.writeHeaders(decision, times)
    return { action: 'allow', decision, headers, key }
  }

  /** Holds the refused key out for its backoff (in the store); the decision with that wait. */
  private async backOff({ key, decision, limiter }: Counted, refusals: number): Promise<Decision> {
    const wait = backoffMs(this.r.backoff!, decision.policy.windowMs, refusals)
    await limiter!.block(key, wait)
    this.r.refusals!.extend(key, decision.at + wait)
    return waitingFor(decision, wait)
  }

  /** A rate-limited request's verdict: headers, onLimited, then limited or banned. */
  private refuse(
    req: Req,
    decision: Decision,
    { key }: Counted,
    refusals: number,
  ): Awaitable<RejectVerdict> {
    const r = this.r
    const times = responseTimes(decision, decision.at, r.resetStyle)
    const headers = r.writeHeaders(decision, times)
    if (r.onLimited !== undefined) r.onLimited(req, decision)
    return r.rejections.refuse(req, key, decision, headers, times.retryAfterSeconds, refusals)
  }

  /** Gives an admitted request's charge back (a skip option, or a hold the client left). */
  private refundOf({ key, units, decision, rules, limiter }: Counted): () => Promise<void> {
    const r = this.r
    return rules !== undefined
      ? () => r.rules!.limiter.refund(rules, { cost: units, at: decision.at })
      : () => limiter!.refund(key, { cost: units, at: decision.at })
  }

  /** With a skip option: refunds the charge once the response shows it should not count. */
  private async settle(req: Req, res: Res, key: string, refund: () => Promise<void>) {
    const r = this.r
    try {
      // 'close' without a finished response: the client went away, which counts as a failure.
      const success = res.writableFinished
        ? r.requestWasSuccessful
          ? await r.requestWasSuccessful(req, res)
          : res.statusCode < 400
        : false
      if (success ? r.skipSuccessful : r.skipFailed) await refund()
    } catch (error) {
      r.logger.warn(`[sluice] refund for key ${JSON.stringify(key)} failed: ${String(error)}`)
    }
  }

  /**
   * Holds an admitted request for its `delayMs`, within `maxDelayMs` and `maxHolds`; a request
   * beyond either, or whose client leaves while held, is not passed on and its charge goes back.
   */
  private shape(
    req: Req,
    res: Res,
    { key, decision, closed }: Counted,
    refund: () => Promise<void>,
    verdict: AllowVerdict,
  ): Awaitable<HttpVerdict> {
    const r = this.r
    const giveBack = (): void => {
      refund().catch((error: unknown) => {
        r.logger.warn(`[sluice] refund for key ${JSON.stringify(key)} failed: ${String(error)}`)
      })
    }
    if (!r.holds.admits(decision.delayMs)) {
      giveBack()
      const seconds = Math.max(1, Math.ceil(decision.delayMs / 1000))
      const retry: HeaderList = [...verdict.headers, ['Retry-After', String(seconds)]]
      return r.rejections.limited(decision, retry, seconds, key)
    }
    return r.holds.hold(decision.delayMs, res, giveBack).then((end) => {
      if (end === 'left') return r.rejections.aborted(key) // its charge is back already
      closed?.then(() => this.settle(req, res, key, refund))
      return verdict
    })
  }
}
