/**
 * Owns counting a throttler's requests through Sluice's HTTP pipeline (the same one every
 * adapter runs): one pipeline per throttler and per distinct `limit`/`ttl` a request resolves
 * to, keyed by the guard's key, with the throttler's suffixed headers and its block.
 */
import type { LimitOptions, Store } from '@sluice/core'
import { isPromise } from '@sluice/core/adapter'
import type { HeaderList, HttpLimitOptions, HttpLimiter, Logger, ResponseLike } from '@sluice/http'
import { createHttpLimiter } from '@sluice/rules'
import { BlockLedger, recordOf } from './blocks'
import { DEFAULT_THROTTLER, throttlerPrefix } from './constants'
import { defaultAlgorithm } from './default-algorithm'
import type { ThrottlerModuleObjectOptions, ThrottlerOptions } from './options'
import { nestDefaults, type PlatformRequest } from './platform'
import type { ThrottlerStorageRecord } from './storage'

/**
 * One throttler's request as the pipeline reads it: the guard's key and cost, and the platform's
 * request. The pipeline reads the address, headers, URL and method only when it needs them (a
 * key it cannot use, proxy checks): Express's `req.ip` runs proxy-addr on every read.
 */
export class ThrottledCall {
  constructor(
    readonly req: PlatformRequest | undefined,
    readonly key: string,
    readonly cost: number,
  ) {}

  get ip(): string | undefined {
    return this.req?.ip
  }

  get headers(): Record<string, string | string[] | undefined> {
    return this.req?.headers ?? {}
  }

  get url(): string | undefined {
    return this.req?.originalUrl ?? this.req?.url
  }

  get method(): string | undefined {
    return this.req?.method
  }
}

/** What the guard asks for one throttler. */
export interface CountRequest {
  readonly throttler: ThrottlerOptions & { name: string }
  readonly limit: number
  readonly ttl: number
  readonly blockDuration: number
  readonly key: string
  readonly cost: number
  readonly req: PlatformRequest | undefined
  readonly res: ResponseLike
}

/** The counted request: @nestjs/throttler's record, and the headers of an admitted request. */
export interface Counted {
  readonly record: ThrottlerStorageRecord
  readonly headers: HeaderList
}

interface Pipeline {
  readonly http: HttpLimiter<ThrottledCall, ResponseLike>
  readonly ledger: BlockLedger
}

const suffixOf = (name: string): string => (name === DEFAULT_THROTTLER ? '' : `-${name}`)

/** The guard's counting on Sluice stores. */
export class SluiceCounter {
  private readonly pipelines = new Map<string, Pipeline>()

  constructor(
    private readonly common: ThrottlerModuleObjectOptions,
    private readonly store: Store,
    private readonly logger: Logger,
    private readonly headerPrefix: string,
  ) {}

  async count(request: CountRequest): Promise<Counted> {
    const { throttler, limit, ttl, req } = request
    const pipeline = this.pipelineFor(throttler, limit, ttl)
    const call = new ThrottledCall(req, request.key, request.cost)
    const verdict = await pipeline.http.decideNow(call, request.res)
    if (verdict.action === 'pass') {
      const record = { totalHits: 0, timeToExpire: 0, isBlocked: false, timeToBlockExpire: 0 }
      return { record, headers: [] }
    }
    // With several limits a block forgives none of them (see recordOf).
    const forgive = throttler.limits === undefined
    let record = recordOf(
      pipeline.http.limiter!,
      pipeline.ledger,
      verdict.key,
      verdict.decision!,
      request.blockDuration,
      forgive,
      (error) => this.blockFailed(throttler, verdict.key, error),
    )
    if (isPromise(record)) record = await record
    // A refusal's headers too, but its Retry-After, which the guard sets from the block: a
    // guard whose throwThrottlingException does not throw (monitoring only) sends them, as
    // @nestjs/throttler's does.
    const retryAfter = `retry-after${suffixOf(throttler.name).toLowerCase()}`
    const headers =
      verdict.action === 'allow'
        ? verdict.headers
        : verdict.headers.filter(([name]) => name.toLowerCase() !== retryAfter)
    return { record, headers }
  }

  /**
   * A block that could not be placed (the store failed after the count): under `onStoreError:
   * 'throw'` the error goes on to Nest (a 500), as a failed count's would; otherwise the request
   * is refused as its count says, with a warning, instead of a 500 that the option said not to give.
   */
  private blockFailed(throttler: ThrottlerOptions, key: string, error: unknown): void {
    const mode = throttler.onStoreError ?? this.common.onStoreError ?? 'throw'
    if (mode === 'throw') throw error
    this.logger.warn(
      `[sluice] the block of key ${JSON.stringify(key)} was not placed (${String(error)}); the request is refused by its count`,
    )
  }

  /** Builds (once) the pipeline of a throttler at these values: a bad Sluice option throws here. */
  pipelineFor(
    throttler: ThrottlerOptions & { name: string },
    limit: number,
    ttl: number,
  ): Pipeline {
    const id = `${throttler.name}\n${limit}\n${ttl}`
    let pipeline = this.pipelines.get(id)
    if (pipeline === undefined) {
      const options = this.optionsOf(throttler, limit, ttl)
      const suffix = suffixOf(throttler.name)
      const prefix = this.headerPrefix
      const http = createHttpLimiter<ThrottledCall, ResponseLike>(
        options,
        nestDefaults((call) => call.req, {
          legacyNames: {
            limit: `${prefix}-Limit${suffix}`,
            remaining: `${prefix}-Remaining${suffix}`,
            reset: `${prefix}-Reset${suffix}`,
            retryAfter: `Retry-After${suffix}`,
          },
          customRejection: true,
        }),
      )
      pipeline = { http, ledger: new BlockLedger() }
      this.pipelines.set(id, pipeline)
    }
    return pipeline
  }

  private optionsOf(
    throttler: ThrottlerOptions & { name: string },
    limit: number,
    ttl: number,
  ): HttpLimitOptions<ThrottledCall, ResponseLike> {
    const common = this.common
    const algorithmOf = (max: number) => throttler.algorithm ?? defaultAlgorithm(max)
    const own: LimitOptions = {
      limit,
      window: ttl,
      algorithm: algorithmOf(limit),
      burst: throttler.burst,
    }
    const more = throttler.limits?.map((l) => ({ algorithm: algorithmOf(l.limit), ...l }))
    const counted = more === undefined ? own : { limits: [own, ...more] }
    const setHeaders = throttler.setHeaders ?? common.setHeaders ?? true
    return {
      ...counted,
      cost: (call) => call.cost,
      key: (call) => call.key,
      store: throttler.store ?? this.store,
      prefix: throttlerPrefix(throttler.name),
      onStoreError: throttler.onStoreError ?? common.onStoreError,
      shadow: throttler.shadow ?? common.shadow,
      clock: common.clock,
      logger: this.logger,
      onDecision: common.onDecision,
      legacyHeaders: setHeaders,
      retryAfterHeader: false,
    }
  }
}
