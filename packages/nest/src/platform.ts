/**
 * Owns what the pipeline is told about the platform under Nest (Express or Fastify): the
 * request as the core reads it, the proxy-trust setting, the TCP peer, and the raw response.
 */
import type { FrameworkDefaults, ProxyTrust, ResponseLike } from '@sluice/http'

/** A platform request as the guard sees it: Express's `req` or Fastify's `request`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- what getRequestResponse gives is the platform's own object
export type PlatformRequest = Record<string, any>

function expressTrust(setting: unknown): ProxyTrust {
  if (setting === true) return 'all'
  return setting ? 'some' : 'none'
}

/** Fastify decorates `ips` only when it trusts proxies; a chain longer than trusted shows all. */
function fastifyTrust(request: PlatformRequest): ProxyTrust {
  if (!('ips' in request)) return 'none'
  const forwarded: unknown = request.headers?.['x-forwarded-for']
  if (typeof forwarded === 'string' && forwarded.includes(',')) {
    const ips = request.ips as unknown[] | undefined
    if (ips !== undefined && ips.length > forwarded.split(',').length) return 'all'
  }
  return 'some'
}

/** The platform's proxy trust, read from the request. */
export function trustOf(req: PlatformRequest | undefined): ProxyTrust {
  if (req === undefined || req === null) return 'none'
  if (typeof req.app?.get === 'function') return expressTrust(req.app.get('trust proxy'))
  if (req.raw !== undefined) return fastifyTrust(req)
  return 'none'
}

/** The TCP peer's address. */
export function peerOf(req: PlatformRequest | undefined): string | undefined {
  return req?.socket?.remoteAddress ?? req?.raw?.socket?.remoteAddress
}

const PROXY_HINT =
  "on Express, app.set('trust proxy', '<your proxy's address or CIDR>') (NestExpressApplication); on Fastify, new FastifyAdapter({ trustProxy: '<your proxy's address or CIDR>' })."

/** The pipeline's view of Nest, for a request type whose platform request is `platformOf(req)`. */
export function nestDefaults<Req>(
  platformOf: (req: Req) => PlatformRequest | undefined,
  extra: Partial<FrameworkDefaults<Req>>,
): FrameworkDefaults<Req> {
  return {
    framework: 'NestJS',
    resetStyle: 'delta',
    proxyTrust: (req) => trustOf(platformOf(req)),
    peerAddress: (req) => peerOf(platformOf(req)),
    proxyHint: PROXY_HINT,
    ...extra,
  }
}

/** A response that never closes, for contexts without one (WebSockets, some GraphQL setups). */
const NO_RESPONSE: ResponseLike = {
  writableFinished: false,
  destroyed: false,
  statusCode: 200,
  once: () => undefined,
  off: () => undefined,
}

/** Node's response under the platform's: Express's `res` is one, Fastify's reply holds it as `raw`. */
export function rawResponse(res: PlatformRequest | undefined): ResponseLike {
  const raw = res?.raw ?? res
  return typeof raw?.once === 'function' && 'writableFinished' in raw
    ? (raw as ResponseLike)
    : NO_RESPONSE
}
