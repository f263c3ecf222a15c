/**
 * Owns finding a Fetch request's client address: the `ip` option, else the platform's own
 * (`request.ip`, which Next.js before 15 and some hosts set). A request with neither is an
 * error that says how to get the address on each platform, never a bucket every such client shares.
 */
import { ConfigError, invalidOption, ipKeyOf } from '@sluice/core/web'

/** How to find the client address, per platform, quoted in the error. */
export const CLIENT_IP_FIXES = [
  'Bun.serve: ip: (request) => server.requestIP(request)?.address',
  'Deno.serve: pass info.remoteAddr.hostname, e.g. ip: () => info.remoteAddr.hostname in the handler',
  "Cloudflare Workers: ip: (request) => request.headers.get('cf-connecting-ip')",
  "Vercel / Next.js 15+: ip: (request) => request.headers.get('x-real-ip')",
  "Hono: rateLimiter({ getConnInfo }) with getConnInfo from 'hono/bun', 'hono/deno', 'hono/cloudflare-workers' or '@hono/node-server/conninfo'",
  'or a `key` option that never returns undefined (a user id, an API token)',
]

function missingAddress(framework: string): never {
  throw new ConfigError(
    `${framework} rateLimit: a request has no client address, and without one every such client would share one bucket. Give the address or a key:\n  - ${CLIENT_IP_FIXES.join('\n  - ')}`,
  )
}

/**
 * The address reader the pipeline calls for the default key and the allow/deny lists: `ip`'s
 * answer, else `readPlatform`'s; throws the error above when neither has one.
 */
export function clientIpReader<Req>(
  ip: ((req: Req) => string | null | undefined) | undefined,
  readPlatform: (req: Req) => string | undefined,
  framework: string,
): (req: Req) => string {
  if (ip !== undefined && typeof ip !== 'function')
    invalidOption('ip', ip, 'a function of the request')
  return function clientIp(req) {
    const address = ip?.(req) ?? readPlatform(req)
    if (typeof address !== 'string' || address === '') return missingAddress(framework)
    return address
  }
}

/** `request.ip` where a platform sets it (Next.js before 15, some edge hosts). */
export function platformIp(request: Request): string | undefined {
  const ip = (request as { ip?: unknown }).ip
  return typeof ip === 'string' ? ip : undefined
}

/**
 * The default key as a key function, for `combineKeys` (a `Request` has no `ip` for core's
 * ipKey to read): the address `readIp` finds, IPv6 grouped by `ipv6Subnet`; a request without
 * one is the error above.
 */
export function addressKey<Req>(
  readIp: (req: Req) => string | null | undefined,
  framework: string,
  options: { ipv6Subnet?: number | false } = {},
): (req: Req) => string {
  if (typeof readIp !== 'function') invalidOption('ipKey(ip)', readIp, 'a function of the request')
  const address = clientIpReader(readIp, () => undefined, framework)
  const keyOf = ipKeyOf({ ipv6Subnet: options.ipv6Subnet })
  return function keyByAddress(req) {
    return keyOf(address(req))
  }
}
