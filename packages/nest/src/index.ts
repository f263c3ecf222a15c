/**
 * @sluice/nest: @nestjs/throttler 6's module, guard and decorators, counting in Sluice stores.
 * Change `from '@nestjs/throttler'` to `from '@sluice/nest'`.
 */
export { ThrottlerModule } from './module'
export { ThrottlerGuard } from './guard'
export {
  Throttle,
  SkipThrottle,
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  getOptionsToken,
  getStorageToken,
  type ThrottlerMethodOrControllerOptions,
} from './decorators'
export { ThrottlerException, throttlerMessage } from './exception'
export { ThrottlerStorage, type ThrottlerStorageRecord } from './storage'
export { ThrottlerStorageService, type ThrottlerStorageServiceOptions } from './storage-service'
export { seconds, minutes, hours, days, weeks } from './utilities'
export { resetThrottlerWarnings } from './check-options'
export { rateLimitGuard, type NestHttpRequest, type RateLimitGuard } from './rate-limit-guard'
export type {
  Resolvable,
  SluiceThrottlerExtras,
  ThrottlerAsyncOptions,
  ThrottlerGenerateKeyFunction,
  ThrottlerGetTrackerFunction,
  ThrottlerLimitDetail,
  ThrottlerModuleObjectOptions,
  ThrottlerModuleOptions,
  ThrottlerOptions,
  ThrottlerOptionsFactory,
  ThrottlerRequest,
} from './options'
export { ipKey, headerKey, userKey, combineKeys, normalizeIp } from '@sluice/http'
export type { Decision } from '@sluice/core'
export type { HttpLimitOptions } from '@sluice/http'
