/**
 * Owns finding a Fetch request's client address: the `ip` option, else the platform's own
 * (`request.ip`, which Next.js before 15 and some hosts set). A request with neither is a
 * MissingAddressError saying how to get the address on each platform; the limiter lets such a
 * request through unlimited with one warning per process (onMissingAddress: 'skip') or throws it,
 * never puts every such client in one bucket.
 */
import { ConfigError, invalidOption, isPromise } from '@sluice/core/web'
import { compileTrustProxy, ipKeyOf, type FrameworkDefaults } from '@sluice/http'

/** What a request without a client address gets: through, unlimited (one warning), or the error. */
export type MissingAddressMode = 'skip' | 'throw'

/** How to find the client address with @sluice/fetch, per platform, quoted in the messages. */
export const CLIENT_IP_FIXES = [
  'Bun.serve: ip: (request) => server.requestIP(request)?.address',
  'Deno.serve: pass info.remoteAddr.hostname, e.g. ip: () => info.remoteAddr.hostname in the handler',
  "Cloudflare Workers: ip: (request) => request.headers.get('cf-connecting-ip')",
  "Vercel / Next.js 15+: ip: (request) => request.headers.get('x-real-ip')",
  'behind your own proxy: trustProxy (docs/proxies.md)',
  'or a `key` option that never returns undefined (a user id, an API token)',
]

/** Why no address was found: each kind has its own message (and its own once-only warning). */
export type MissingAddressKind = 'none' | 'promise' | 'object' | 'threw'

/** A request without a client address; `kind` says why. A ConfigError: the fix is in the setup. */
export class MissingAddressError extends ConfigError {
  constructor(
    readonly framework: string,
    readonly kind: MissingAddressKind,
    readonly option: string,
    fixes: readonly string[],
    detail = '',
  ) {
    super(`${framework} rateLimit: ${problem(kind, option, detail)}${fixList(kind, fixes)}`)
  }
}

function problem(kind: MissingAddressKind, option: string, detail: string): string {
  switch (kind) {
    case 'promise':
      return `\`${option}\` returned a Promise: it must return the address itself, synchronously (read a header or the connection info; nothing to await).`
    case 'object':
      return `\`${option}\` returned an object (${detail}): it must return the address as a string, e.g. server.requestIP(request)?.address, not server.requestIP(request).`
    case 'threw':
      return `\`${option}\` threw (${detail}), so the request has no client address (a request made without a connection, such as app.request() in tests, has none).`
    case 'none':
      return 'a request has no client address, and without one every such client would share one bucket.'
  }
}

function fixList(kind: MissingAddressKind, fixes: readonly string[]): string {
  if (kind === 'promise' || kind === 'object') return ''
  return ` Give the address or a key:\n  - ${fixes.join('\n  - ')}`
}

function checkMode(mode: unknown): MissingAddressMode {
  if (mode === undefined) return 'skip'
  if (mode === 'skip' || mode === 'throw') return mode
  return invalidOption('onMissingAddress', mode, "'skip' or 'throw'")
}

const warned = new Set<string>()

/** Forgets which warnings this process gave (tests of the warnings call it). */
export function resetAddressWarnings(): void {
  warned.clear()
}

/**
 * What the limiter does with a MissingAddressError: rethrow it (`'throw'`), or let the request
 * through unlimited (`'skip'`) after one warning per process, framework and kind.
 */
export function missingAddressPolicy(
  mode: unknown,
  logger: { warn(message: string): void },
): (error: unknown) => void {
  const checked = checkMode(mode)
  return function onMissingAddress(error) {
    if (!(error instanceof MissingAddressError) || checked === 'throw') throw error
    const id = `${error.framework}:${error.kind}`
    if (warned.has(id)) return
    warned.add(id)
    logger.warn(
      `[sluice] ${error.message}\nSuch requests go through unlimited (onMissingAddress: 'skip'); this warning is given once.`,
    )
  }
}

function describe(value: object): string {
  const keys = Object.keys(value).slice(0, 3)
  return keys.length === 0 ? 'with no fields' : `with ${keys.join(', ')}`
}

/**
 * Reads an address from `read` (a user's `ip`, Hono's getConnInfo...): the string it answers,
 * `undefined` for no answer, or a MissingAddressError for a Promise, an object, or a throw.
 */
export function addressFrom<Req>(
  read: (req: Req) => unknown,
  framework: string,
  option: string,
  fixes: readonly string[],
): (req: Req) => string | undefined {
  return function address(req) {
    let value: unknown
    try {
      value = read(req)
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error)
      throw new MissingAddressError(framework, 'threw', option, fixes, detail)
    }
    if (typeof value === 'string') return value === '' ? undefined : value
    if (value === null || value === undefined) return undefined
    if (isPromise(value)) throw new MissingAddressError(framework, 'promise', option, fixes)
    if (typeof value === 'object') {
      throw new MissingAddressError(framework, 'object', option, fixes, describe(value))
    }
    return undefined
  }
}

/**
 * The address reader the pipeline calls for the default key and the allow/deny lists: `ip`'s
 * answer, else `readPlatform`'s; a MissingAddressError when neither has one.
 */
export function clientIpReader<Req>(
  ip: ((req: Req) => string | null | undefined) | undefined,
  readPlatform: (req: Req) => string | undefined,
  framework: string,
  fixes: readonly string[] = CLIENT_IP_FIXES,
): (req: Req) => string {
  if (ip !== undefined && typeof ip !== 'function')
    invalidOption('ip', ip, 'a function of the request')
  const given = ip === undefined ? undefined : addressFrom(ip, framework, 'ip', fixes)
  return function clientIp(req) {
    const address = given?.(req) ?? readPlatform(req)
    if (address === undefined || address === '') {
      throw new MissingAddressError(framework, 'none', 'ip', fixes)
    }
    return address
  }
}

/** Where a Fetch adapter's client is: the sender, the X-Forwarded-For field, the trust between. */
export interface AddressSource<Req> {
  /** The sender's address (`ip`, getConnInfo), from which the trusted hops are walked. */
  peer: (req: Req) => string
  forwardedFor: (req: Req) => string | undefined
  /** `trustProxy` as given: checked here. */
  trustProxy: unknown
  /** How to trust one's proxy, quoted in the proxy warnings. */
  proxyHint: string
}

/**
 * What the pipeline is told about the client address: the address (the sender's, or with
 * `trustProxy` the first X-Forwarded-For entry not from a trusted proxy) and how the warnings
 * read the trust, as the Node adapters tell it of their framework's setting.
 */
export function addressDefaults<Req>(source: AddressSource<Req>): Pick<
  FrameworkDefaults<Req>,
  'proxyTrust' | 'peerAddress' | 'forwardedFor' | 'proxyHint'
> & {
  clientIp: (req: Req) => string
} {
  const trust = compileTrustProxy(source.trustProxy)
  const { peer, forwardedFor } = source
  return {
    clientIp:
      trust.trust === 'none' ? peer : (req) => trust.clientAddress(peer(req), forwardedFor(req)),
    proxyTrust: () => trust.trust,
    peerAddress: peer,
    forwardedFor,
    proxyHint: source.proxyHint,
  }
}

/** `request.ip` where a platform sets it (Next.js before 15, some edge hosts). */
export function platformIp(request: Request): string | undefined {
  const ip = (request as { ip?: unknown }).ip
  return typeof ip === 'string' && ip !== '' ? ip : undefined
}

/**
 * The default key as a key function, for `combineKeys` (a `Request` has no `ip` for core's
 * ipKey to read): the address `readIp` finds, IPv6 grouped by `ipv6Subnet`; a request without
 * one is a MissingAddressError (handled as `onMissingAddress` says).
 */
export function addressKey<Req>(
  readIp: (req: Req) => string | null | undefined,
  framework: string,
  options: { ipv6Subnet?: number | false } = {},
  fixes: readonly string[] = CLIENT_IP_FIXES,
): (req: Req) => string {
  if (typeof readIp !== 'function') invalidOption('ipKey(ip)', readIp, 'a function of the request')
  const address = clientIpReader(readIp, () => undefined, framework, fixes)
  const keyOf = ipKeyOf({ ipv6Subnet: options.ipv6Subnet })
  return function keyByAddress(req) {
    return keyOf(address(req))
  }
}
