/**
 * Owns the tracker and key fallbacks: a `getTracker` or `generateKey` that throws or returns
 * no string never fails the request and never puts every such request in one bucket: the
 * request is tracked (or keyed) by its client IP instead, and the first time is logged.
 */
import type { ExecutionContext } from '@nestjs/common'
import { ipKey, type Logger } from '@sluice/http'
import { peerOf, type PlatformRequest } from './platform'
import type { ThrottlerGenerateKeyFunction, ThrottlerGetTrackerFunction } from './options'

/** What `describe` makes of a bad tracker, for the warning. */
function describe(value: unknown): string {
  if (value === undefined || value === null || value === '')
    return JSON.stringify(value) ?? 'undefined'
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`
}

/** Resolves trackers and keys; one per guard, so each warning is given once per guard. */
export class Trackers {
  private readonly warned = new Set<string>()
  private readonly byIp: (req: { ip?: string }) => string

  constructor(private readonly logger: Logger) {
    this.byIp = ipKey({ logger })
  }

  async of(
    getTracker: ThrottlerGetTrackerFunction,
    req: PlatformRequest | undefined,
    context: ExecutionContext,
    throttler: string,
  ): Promise<string> {
    let tracker: unknown
    try {
      tracker = await getTracker(req ?? {}, context)
    } catch (error) {
      return this.fallback(req, throttler, `threw ${String(error)}`)
    }
    if (typeof tracker === 'string' && tracker !== '') return tracker
    return this.fallback(req, throttler, `returned ${describe(tracker)}`)
  }

  /** The storage key from `generateKey`, or the client IP when it gives none. */
  keyOf(
    generateKey: ThrottlerGenerateKeyFunction,
    context: ExecutionContext,
    tracker: string,
    throttler: string,
    req: PlatformRequest | undefined,
  ): string {
    let key: unknown
    try {
      key = generateKey(context, tracker, throttler)
    } catch (error) {
      return this.fallback(req, throttler, `threw ${String(error)}`, 'generateKey')
    }
    if (typeof key === 'string' && key !== '') return key
    return this.fallback(req, throttler, `returned ${describe(key)}`, 'generateKey')
  }

  private fallback(
    req: PlatformRequest | undefined,
    throttler: string,
    what: string,
    option: 'getTracker' | 'generateKey' = 'getTracker',
  ): string {
    if (!this.warned.has(option)) {
      this.warned.add(option)
      const thing = option === 'getTracker' ? 'a tracker' : 'a key'
      this.logger.warn(
        `[sluice] ${option} ${what} for throttler "${throttler}": not ${thing}, so such requests are ${option === 'getTracker' ? 'tracked' : 'keyed'} by their client IP instead. Return a non-empty string.`,
      )
    }
    return this.byIp({ ip: req?.ip ?? peerOf(req) })
  }
}
