/**
 * Owns ThrottlerGuard: @nestjs/throttler's guard (its protected methods included, so subclasses
 * for GraphQL and WebSockets keep working), deciding through Sluice's pipeline, or through a
 * user's own ThrottlerStorage when the module was given one.
 */
import {
  Inject,
  Injectable,
  Optional,
  type CanActivate,
  type ExecutionContext,
  type OnModuleInit,
} from '@nestjs/common'
import { ModulesContainer, Reflector } from '@nestjs/core'
import type { Logger } from '@sluice/http'
import { checkCount, checkModuleOptions, objectForm, warnIfSeconds } from './check-options'
import { DEFAULT_THROTTLER, THROTTLER_OPTIONS } from './constants'
import { SluiceCounter, type Counted } from './counter'
import { ThrottlerException, throttlerMessage } from './exception'
import { hashKey } from './hash'
import { checkControllers, checkThrottleNames } from './names'
import type {
  Resolvable,
  ThrottlerLimitDetail,
  ThrottlerModuleOptions,
  ThrottlerOptions,
  ThrottlerRequest,
} from './options'
import { rawResponse, type PlatformRequest } from './platform'
import { ThrottlerStorage } from './storage'
import { ThrottlerStorageService } from './storage-service'
import { RouteThrottlers, type NamedThrottler } from './route-throttlers'
import { Trackers } from './tracker'

type CommonOptions = Pick<
  ThrottlerOptions,
  'skipIf' | 'ignoreUserAgents' | 'getTracker' | 'generateKey' | 'setHeaders'
>

const LIMIT = 'a positive whole number of requests'
const MS = 'a positive whole number of milliseconds'
const suffixOf = (name: string): string => (name === DEFAULT_THROTTLER ? '' : `-${name}`)

/** Limits requests by every configured throttler; a refused request gets ThrottlerException (429). */
@Injectable()
export class ThrottlerGuard implements CanActivate, OnModuleInit {
  protected headerPrefix = 'X-RateLimit'
  protected errorMessage = throttlerMessage
  protected throttlers!: Array<NamedThrottler>
  protected commonOptions!: CommonOptions
  private names: readonly string[] = []
  private logger: Logger = console
  private counter: SluiceCounter | undefined
  private trackers!: Trackers
  private routes!: RouteThrottlers
  private readonly checked = new WeakSet<object>()

  constructor(
    @Inject(THROTTLER_OPTIONS) protected readonly options: ThrottlerModuleOptions,
    @Inject(ThrottlerStorage) protected readonly storageService: ThrottlerStorage,
    @Inject(Reflector) protected readonly reflector: Reflector,
    @Optional() @Inject(ModulesContainer) private readonly modules?: ModulesContainer,
  ) {}

  async onModuleInit(): Promise<void> {
    const common = objectForm(this.options)
    this.logger = common.logger ?? console
    this.names = checkModuleOptions(this.options, this.logger)
    // Shortest windows first (functions last), as @nestjs/throttler orders them.
    this.throttlers = [...common.throttlers]
      .sort((a, b) => {
        if (typeof a.ttl === 'function') return 1
        if (typeof b.ttl === 'function') return 0
        return a.ttl - b.ttl
      })
      .map((throttler) => ({ ...throttler, name: throttler.name ?? DEFAULT_THROTTLER }))
    this.commonOptions = Array.isArray(this.options)
      ? {}
      : {
          skipIf: common.skipIf,
          ignoreUserAgents: common.ignoreUserAgents,
          getTracker: common.getTracker,
          generateKey: common.generateKey,
          setHeaders: common.setHeaders,
        }
    this.commonOptions.getTracker ??= this.getTracker.bind(this)
    this.commonOptions.generateKey ??= this.generateKey.bind(this)
    this.trackers = new Trackers(this.logger)
    this.routes = new RouteThrottlers(this.reflector, this.throttlers, {
      getTracker: this.commonOptions.getTracker,
      generateKey: this.commonOptions.generateKey,
    })
    const storage = this.storageService
    if (storage instanceof ThrottlerStorageService) {
      this.counter = new SluiceCounter(common, storage.store, this.logger, this.headerPrefix)
      // Fixed values are built now, so a bad Sluice option fails the start, not a request.
      for (const throttler of this.throttlers) {
        if (typeof throttler.limit === 'number' && typeof throttler.ttl === 'number') {
          this.counter.pipelineFor(throttler, throttler.limit, throttler.ttl)
        }
      }
    }
    if (this.modules !== undefined) checkControllers(this.modules, this.names)
  }

  /** Runs every throttler on the request, shortest window first; throws ThrottlerException on a refusal. */
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const handler = context.getHandler()
    const classRef = context.getClass()
    if (await this.shouldSkip(context)) return true
    this.checkNames(handler, classRef)
    const commonSkipIf = this.commonOptions.skipIf
    let continues = true
    for (const route of this.routes.of(handler, classRef)) {
      const { throttler, labels } = route
      const skipIf = throttler.skipIf || commonSkipIf
      if (route.skip || skipIf?.(context)) continue
      const limit = await this.resolveCount(context, route.limit, labels.limit, LIMIT)
      const ttl = await this.resolveCount(context, route.ttl, labels.ttl, MS)
      warnIfSeconds(ttl, limit, labels.ttl, this.logger)
      const blockDuration = await this.resolveCount(
        context,
        route.blockDuration || ttl,
        labels.block,
        MS,
      )
      const request = {
        context,
        limit,
        ttl,
        throttler,
        blockDuration,
        getTracker: route.getTracker,
        generateKey: route.generateKey,
      }
      if (!(await this.handleRequest(request))) continues = false
    }
    return continues
  }

  /** Override to skip whole requests (before any throttler runs). */
  protected async shouldSkip(_context: ExecutionContext): Promise<boolean> {
    return false
  }

  /** Counts the request under one throttler, sets its headers, and throws when it is refused. */
  protected async handleRequest(requestProps: ThrottlerRequest): Promise<boolean> {
    const { context, limit, ttl, throttler, getTracker, generateKey } = requestProps
    const { req, res } = this.getRequestResponse(context)
    const ignoreUserAgents = throttler.ignoreUserAgents ?? this.commonOptions.ignoreUserAgents
    if (Array.isArray(ignoreUserAgents)) {
      const agent = req?.headers?.['user-agent']
      for (const pattern of ignoreUserAgents) {
        pattern.lastIndex = 0 // a /g pattern would otherwise match every other request only
        if (pattern.test(agent)) return true
      }
    }
    const name = throttler.name ?? DEFAULT_THROTTLER
    const tracker = await this.trackers.of(getTracker, req, context, name)
    const key = this.trackers.keyOf(generateKey, context, tracker, name, req)
    const setHeaders = throttler.setHeaders ?? this.commonOptions.setHeaders ?? true
    const counted = await this.count(requestProps, name, key, req, res)
    const { record } = counted
    const header = (field: string, value: number) => {
      if (setHeaders && typeof res?.header === 'function') res.header(field, value)
    }
    if (record.isBlocked) {
      header(`Retry-After${suffixOf(name)}`, record.timeToBlockExpire)
      await this.throwThrottlingException(context, { limit, ttl, key, tracker, ...record })
    }
    for (const [field, value] of counted.headers) header(field, Number(value))
    return true
  }

  /** The request's count: in Sluice's pipeline, or through the module's own storage. */
  private async count(
    props: ThrottlerRequest,
    name: string,
    key: string,
    req: PlatformRequest | undefined,
    res: PlatformRequest | undefined,
  ): Promise<Counted> {
    const { context, limit, ttl, throttler, blockDuration } = props
    if (this.counter !== undefined) {
      const cost =
        throttler.cost === undefined
          ? 1
          : await this.resolveCount(
              context,
              throttler.cost,
              `cost of throttler "${name}"`,
              'a positive whole number',
            )
      return this.counter.count({
        throttler: throttler.name === name ? (throttler as NamedThrottler) : { ...throttler, name },
        limit,
        ttl,
        blockDuration,
        key,
        cost,
        req,
        res: rawResponse(res),
      })
    }
    const record = await this.storageService.increment(key, ttl, limit, blockDuration, name)
    const suffix = suffixOf(name)
    const remaining = Math.max(0, limit - record.totalHits)
    return {
      record,
      headers: [
        [`${this.headerPrefix}-Limit${suffix}`, String(limit)],
        [`${this.headerPrefix}-Remaining${suffix}`, String(remaining)],
        [`${this.headerPrefix}-Reset${suffix}`, String(record.timeToExpire)],
      ],
    }
  }

  /** Who is counted: the client IP. */
  protected async getTracker(req: PlatformRequest): Promise<string> {
    return req.ip
  }

  /** Where the request and response are; override for GraphQL (`GqlExecutionContext`) or WebSockets. */
  protected getRequestResponse(context: ExecutionContext): {
    req: PlatformRequest
    res: PlatformRequest
  } {
    const http = context.switchToHttp()
    return { req: http.getRequest(), res: http.getResponse() }
  }

  /** The storage key: a sha256 of the controller, handler, throttler name and tracker. */
  protected generateKey(context: ExecutionContext, suffix: string, name: string): string {
    const prefix = `${context.getClass().name}-${context.getHandler().name}-${name}`
    return hashKey(`${prefix}-${suffix}`)
  }

  /** Throws the 429; override to answer otherwise. */
  protected async throwThrottlingException(
    context: ExecutionContext,
    throttlerLimitDetail: ThrottlerLimitDetail,
  ): Promise<void> {
    throw new ThrottlerException(await this.getErrorMessage(context, throttlerLimitDetail))
  }

  /** The 429's message: the module's `errorMessage`, else `errorMessage` of the guard. */
  protected async getErrorMessage(
    context: ExecutionContext,
    throttlerLimitDetail: ThrottlerLimitDetail,
  ): Promise<string> {
    if (Array.isArray(this.options) || !this.options.errorMessage) return this.errorMessage
    const { errorMessage } = this.options
    return typeof errorMessage === 'function'
      ? errorMessage(context, throttlerLimitDetail)
      : errorMessage
  }

  /** A limit, ttl, block or cost: the value, or what its function returns, checked. */
  private async resolveCount(
    context: ExecutionContext,
    value: Resolvable<number>,
    option: string,
    what: string,
  ): Promise<number> {
    const resolved = typeof value === 'function' ? await value(context) : value
    return checkCount(resolved, option, what)
  }

  /** A route's first request checks its `@Throttle()` names (controllers were checked at start-up). */
  private checkNames(handler: object, classRef: object): void {
    if (this.checked.has(handler)) return
    checkThrottleNames(classRef, this.names)
    checkThrottleNames(handler, this.names)
    this.checked.add(handler)
  }
}
