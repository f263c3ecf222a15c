/**
 * Owns the adapters' `createHttpLimiter`: options resolved once (resolve.ts), the one pipeline
 * over them (pipeline.ts), and the HttpLimiter an adapter holds.
 */
import { gateOf, watchHttp, type WaitUntil } from '@sluice/core/web'
import type { RequestLike } from './keys'
import { Pipeline } from './pipeline'
import { resolveHttpOptions, type RulesLimiterFactory } from './resolve'
import type {
  FrameworkDefaults,
  HttpLimitOptions,
  HttpLimiter,
  HttpVerdict,
  ResponseLike,
} from './types'

/**
 * The adapters' `createHttpLimiter`, over the rules limiter of one build (Node's opens rules
 * files; the web build's takes compiled rule sets only). Everything else is this one pipeline.
 */
export function httpLimiterFactory(createRulesLimiter: RulesLimiterFactory) {
  /**
   * Validates and normalises an adapter's options once, at start-up, and returns the
   * per-request pipeline. A bad option throws a ConfigError naming it and its value.
   */
  return function createHttpLimiter<
    Req extends RequestLike,
    Res extends ResponseLike = ResponseLike,
  >(options: HttpLimitOptions<Req, Res>, defaults: FrameworkDefaults<Req>): HttpLimiter<Req, Res> {
    const resolved = resolveHttpOptions(options, defaults, createRulesLimiter)
    const pipeline = new Pipeline(resolved)
    const decideNow = pipeline.fast ? pipeline.decideFast : pipeline.decideAsync
    function decide(req: Req, res: Res, waitUntil?: WaitUntil): Promise<HttpVerdict> {
      try {
        return Promise.resolve(decideNow(req, res, waitUntil))
      } catch (error) {
        return Promise.reject(error)
      }
    }
    const rulesLimiter = resolved.rules?.limiter
    const httpLimiter: HttpLimiter<Req, Res> = {
      decide,
      decideNow,
      limiter: resolved.fixed,
      rulesLimiter,
      store: resolved.store,
      check: pipeline.check,
      close: rulesLimiter === undefined ? () => {} : rulesLimiter.close,
      gauges: () => ({
        held: resolved.holds.active,
        waiting: resolved.holds.waiting + (gateOf(resolved.fixed)?.waiting ?? 0),
        slotsInFlight: gateOf(resolved.fixed)?.held ?? 0,
      }),
    }
    watchHttp(options.onDecision, defaults.framework, httpLimiter)
    return httpLimiter
  }
}
