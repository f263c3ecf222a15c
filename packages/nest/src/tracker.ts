/**
 * Owns the tracker fallback: a `getTracker` that throws or returns no tracker (not a non-empty
 * string) never fails the request and never puts every such request in one bucket: the request
 * is tracked by its client IP instead, and the first time is logged.
 */
import type { ExecutionContext } from '@nestjs/common'
import { ipKey, type Logger } from '@sluice/core'
import { peerOf, type PlatformRequest } from './platform'
import type { ThrottlerGetTrackerFunction } from './options'

/** What `describe` makes of a bad tracker, for the warning. */
function describe(value: unknown): string {
  if (value === undefined || value === null || value === '')
    return JSON.stringify(value) ?? 'undefined'
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`
}

/** Resolves trackers; one per guard, so its warning is given once per guard. */
export class Trackers {
  private warned = false
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

  private fallback(req: PlatformRequest | undefined, throttler: string, what: string): string {
    if (!this.warned) {
      this.warned = true
      this.logger.warn(
        `[sluice] getTracker ${what} for throttler "${throttler}": not a tracker, so such requests are tracked by their client IP instead. Return a non-empty string.`,
      )
    }
    return this.byIp({ ip: req?.ip ?? peerOf(req) })
  }
}
