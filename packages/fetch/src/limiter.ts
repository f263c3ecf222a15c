/**
 * Owns a Fetch adapter's limiter over core's one pipeline: options mapped once, then per
 * request the verdict, the handler and the Response. @sluice/fetch (requests) and @sluice/hono
 * (contexts) both run it.
 */
import { ConfigError, type Decision, type WaitUntil } from '@sluice/core/web'
import {
  createRefusalJson,
  type FrameworkDefaults,
  type HeaderList,
  type HttpLimitOptions,
  type HttpLimiter,
  type HttpVerdict,
  type RejectVerdict,
  type RequestLike,
} from '@sluice/http'
import { createHttpLimiter } from './host'
import { missingAddressPolicy, type MissingAddressMode } from './client-ip'
import { FetchExchange } from './exchange'
import { refusalResponse, withHeaders } from './respond'

type Awaitable<T> = T | Promise<T>

/**
 * `check` with `concurrency`: refused, since nothing would give the slot back. `check` never
 * sees the response end (a Next.js middleware never does; a route calling `finish` after its
 * handler would still release before a streamed body is sent), and a lease renews while held,
 * so every forgotten `finish` would take a slot of the key for good.
 */
function refuseConcurrency(concurrency: unknown): never {
  throw new ConfigError(
    `\`concurrency\` (${JSON.stringify(concurrency)}) cannot be used with check(): check() never sees the response end (a Next.js middleware never does), so its slot would never be given back. Use limited(request, handler), which holds the slot until the response body has been sent, or a limiter without \`concurrency\` for check().`,
  )
}

const PASS: HttpVerdict = { action: 'pass' }

/** Core's options, with `requestWasSuccessful` given the handler's Fetch `Response`. */
export interface FetchLimitOptions<Req> extends Omit<
  HttpLimitOptions<Req>,
  'requestWasSuccessful'
> {
  /** Decides success for `skipSuccessfulRequests` / `skipFailedRequests`. @default response.status < 400 */
  requestWasSuccessful?: (req: Req, response: Response) => Awaitable<boolean>
  /**
   * A request with no client address (none from the platform or the `ip` option, or an `ip` that
   * answered a Promise or an object): `'skip'` lets it through unlimited, with one warning per
   * process naming the fix; `'throw'` rejects with the MissingAddressError (the framework's 500).
   * Never one bucket shared by every such client. See docs/fetch.md.
   * @default 'skip'
   */
  onMissingAddress?: MissingAddressMode
}

/** What `check` answers: the verdict as data, for frameworks that compose the answer themselves. */
export interface FetchCheck {
  /** False when the request is refused: send `response`. */
  readonly allowed: boolean
  /** The limiter's decision; undefined when the request was skipped, allow- or deny-listed. */
  readonly decision: Decision | undefined
  /** Rate-limit headers to add to the response you send (already on `response` when refused). */
  readonly headers: HeaderList
  /** The refusal to send (429, or 403 for bans and deny lists); undefined when allowed. */
  readonly response: Response | undefined
  /**
   * Tell the limiter how the request ended, for `skipSuccessfulRequests` / `skipFailedRequests`
   * (a thrown handler: call it without a response). Without those options it does nothing
   * (`check` takes no concurrency slot: a limiter with `concurrency` refuses `check`).
   */
  finish(response?: Response): void
}

/** What a Fetch adapter tells the pipeline: the client address and the proxy trust (see addressDefaults). */
export interface FetchFramework<Req> extends Pick<
  FrameworkDefaults<Req>,
  'proxyTrust' | 'peerAddress' | 'forwardedFor' | 'proxyHint'
> {
  /** Named in errors and warnings. */
  framework: string
  /** The client address (a MissingAddressError when there is none; see client-ip.ts). */
  clientIp: (req: Req) => string
  /** The signal that aborts when the client goes away. */
  signalOf: (req: Req) => AbortSignal | undefined
  /** The request's method: a HEAD response's body is never sent, so no slot waits for it. */
  methodOf: (req: Req) => string
}

export interface FetchLimiter<Req> {
  /**
   * Decides `req`; runs `next` when it may pass and returns its Response with the headers (those
   * it already carries, from the handler or an inner limiter, are kept). With `concurrency`, the
   * returned Response's body gives the slot back once it has been read to its end, errors or is
   * cancelled: send that Response, not the handler's. `waitUntil`: the request's hand-over of
   * work that must outlive the response (see ConsumeOptions.waitUntil).
   */
  handle(
    req: Req,
    next: (decision: Decision | undefined) => Awaitable<Response>,
    waitUntil?: WaitUntil,
  ): Promise<Response>
  /**
   * Decides `req` without a handler. A limiter with `concurrency` rejects with a ConfigError:
   * `check` never sees the response end (a Next.js middleware never does), so its slot would
   * never be given back.
   */
  check(req: Req, waitUntil?: WaitUntil): Promise<FetchCheck>
  readonly core: HttpLimiter<Req, FetchExchange>
}

export function createFetchLimiter<Req extends RequestLike>(
  options: FetchLimitOptions<Req>,
  framework: FetchFramework<Req>,
): FetchLimiter<Req> {
  const { requestWasSuccessful: succeeded, onMissingAddress, ...rest } = options
  const core = createHttpLimiter<Req, FetchExchange>(
    {
      ...rest,
      // A handler that threw has no Response: it counts as the 500 a server would send. A
      // value that is no function goes on as is, for core's ConfigError naming it.
      requestWasSuccessful:
        typeof succeeded === 'function'
          ? (req, exchange) =>
              succeeded(req, exchange.response ?? new Response(null, { status: 500 }))
          : (succeeded as undefined),
    },
    {
      framework: framework.framework,
      resetStyle: 'epoch',
      clientIp: framework.clientIp,
      proxyTrust: framework.proxyTrust,
      peerAddress: framework.peerAddress,
      forwardedFor: framework.forwardedFor,
      proxyHint: framework.proxyHint,
    },
  )
  const refusalJson = createRefusalJson(options.message, (verdict) => JSON.stringify(verdict.body))

  const missingAddress = missingAddressPolicy(onMissingAddress, options.logger ?? console)

  async function decide(
    req: Req,
    waitUntil: WaitUntil | undefined,
  ): Promise<{ verdict: HttpVerdict; exchange: FetchExchange }> {
    const exchange = new FetchExchange(framework.signalOf(req))
    try {
      return { verdict: await core.decide(req, exchange, waitUntil), exchange }
    } catch (error) {
      // No address is found before anything is counted: nothing to give back.
      missingAddress(error)
      return { verdict: PASS, exchange }
    }
  }

  /**
   * A refused request's Response. The refusal is the whole answer, so the exchange closes with
   * it: anything the request took goes back now (a slot taken before shaping refused it).
   */
  function refuse(verdict: RejectVerdict, exchange: FetchExchange): Response {
    const response = refusalResponse(verdict, refusalJson(verdict))
    exchange.finish(response)
    return response
  }

  /**
   * Closes the exchange with the handler's Response. A request holding a concurrency slot is
   * over only when its body has been sent (a stream runs on after the handler returned), so it
   * closes then; refunds, settled at the same close, wait for it too, as on Node. A HEAD
   * response's body is never sent (servers and Hono drop it unread): it closes at once.
   */
  function answer(
    req: Req,
    verdict: HttpVerdict,
    exchange: FetchExchange,
    response: Response,
  ): Response {
    const sent = verdict.action === 'allow' ? withHeaders(response, verdict.headers) : response
    const holdsSlot = verdict.action === 'allow' && verdict.decision.slot !== undefined
    if (holdsSlot && framework.methodOf(req) !== 'HEAD') {
      return exchange.finishWhenSent(response, sent)
    }
    exchange.finish(response)
    return sent
  }

  async function handle(
    req: Req,
    next: (decision: Decision | undefined) => Awaitable<Response>,
    waitUntil?: WaitUntil,
  ): Promise<Response> {
    const { verdict, exchange } = await decide(req, waitUntil)
    if (verdict.action === 'reject') return refuse(verdict, exchange)
    let response: Response
    try {
      response = await next(verdict.action === 'allow' ? verdict.decision : undefined)
    } catch (error) {
      exchange.finish(undefined)
      throw error
    }
    return answer(req, verdict, exchange, response)
  }

  async function check(req: Req, waitUntil?: WaitUntil): Promise<FetchCheck> {
    if (options.concurrency !== undefined) refuseConcurrency(options.concurrency)
    const { verdict, exchange } = await decide(req, waitUntil)
    const finish = (response?: Response) => exchange.finish(response)
    if (verdict.action === 'reject') {
      const response = refuse(verdict, exchange)
      return {
        allowed: false,
        decision: verdict.decision,
        headers: verdict.headers,
        response,
        finish,
      }
    }
    const decision = verdict.action === 'allow' ? verdict.decision : undefined
    const headers = verdict.action === 'allow' ? verdict.headers : []
    return { allowed: true, decision, headers, response: undefined, finish }
  }

  return { handle, check, core }
}
