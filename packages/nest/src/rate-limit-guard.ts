/**
 * Owns rateLimitGuard: Sluice's own options (rules, queue, refunds, deny lists...) as a Nest
 * guard, answering as the Express and Fastify adapters do: Sluice's headers, its 429 JSON body,
 * `req.rateLimit`. For apps that want Sluice rather than @nestjs/throttler's shapes.
 */
import type { ServerResponse } from 'node:http'
import { HttpException, type CanActivate, type ExecutionContext } from '@nestjs/common'
import type { HttpLimitOptions, HttpRequestLike, HttpVerdict } from '@sluice/http'
import { createHttpLimiter } from '@sluice/rules'
import { nestDefaults, rawResponse, type PlatformRequest } from './platform'

/** The platform's request as option functions see it: Express's `req` or Fastify's `request`. */
export type NestHttpRequest = HttpRequestLike & PlatformRequest

/** A guard instance for `@UseGuards(...)` or `app.useGlobalGuards(...)`, plus `close()`. */
export interface RateLimitGuard extends CanActivate {
  canActivate(context: ExecutionContext): Promise<boolean>
  /** Stops the watcher of a `rules` file path it opened. Idempotent. */
  close(): void
}

/**
 * A guard with Sluice's options (docs/configuration.md), checked here, once: a bad one throws a
 * ConfigError naming it. Functions (`key`, `skip`, `limit`...) get the platform's request.
 */
export function rateLimitGuard(options: HttpLimitOptions<NestHttpRequest> = {}): RateLimitGuard {
  const limiter = createHttpLimiter<NestHttpRequest, ServerResponse>(
    options,
    nestDefaults((req: NestHttpRequest) => req, {}),
  )

  function answer(req: NestHttpRequest, res: PlatformRequest, verdict: HttpVerdict): boolean {
    if (verdict.action === 'pass') return true
    req.rateLimit = verdict.decision
    for (const [name, value] of verdict.headers) res.header(name, value)
    if (verdict.action === 'allow') return true
    throw new HttpException(verdict.body as Record<string, unknown>, verdict.status)
  }

  return {
    async canActivate(context) {
      const http = context.switchToHttp()
      const req: NestHttpRequest = http.getRequest()
      const res: PlatformRequest = http.getResponse()
      return answer(req, res, await limiter.decide(req, rawResponse(res) as ServerResponse))
    },
    close: () => limiter.close(),
  }
}
