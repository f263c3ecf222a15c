// The one-time proxy-trust warnings: once per process, framework and kind, however many limiters.
import { readHeader, type RequestLike, type Logger } from './keys'
import { forwardedEntries, type ProxyTrust } from './trust'

export type { ProxyTrust } from './trust'

/**
 * The misconfigurations warned about, each once: `all` every sender is trusted; `untrusted`
 * X-Forwarded-For arrives and no proxy is trusted; `mistrusted` a proxy is trusted, but not the
 * one this request came through. One kind never hides another.
 */
export type ProxyWarningKind = 'all' | 'untrusted' | 'mistrusted'

/** How an adapter tells the warnings about its framework. */
export interface ProxySetup<Req> {
  framework: string
  proxyTrust?: (req: Req) => ProxyTrust
  /** The TCP peer's address (the socket's remote address). */
  peerAddress?: (req: Req) => string | undefined
  /** The address the request is limited by (FrameworkDefaults' `clientIp`). @default req.ip */
  clientIp?: (req: Req) => string | undefined
  /** The X-Forwarded-For field. @default read from req.headers */
  forwardedFor?: (req: Req) => string | undefined
  /** How to trust exactly one's own proxy in this framework, quoted in the warning. */
  proxyHint?: string
  /** Gives a warning its own way (express compat's validation errors). @default logger.warn */
  report?: (kind: ProxyWarningKind, message: string) => void
}

const warned = new Set<string>()
/** Warnings given (or forgotten) so far in this process: a limiter re-reads `done` when it moved. */
let generation = 0

/** Forgets which warnings this process gave (tests of the warnings call it). */
export function resetProxyWarnings(): void {
  warned.clear()
  generation++
}

const KINDS: readonly ProxyWarningKind[] = ['all', 'untrusted', 'mistrusted']

/**
 * Warns once per process (per framework and kind) when the framework trusts every proxy, and
 * when a request carries X-Forwarded-For from a peer the framework did not trust while the
 * limiter keys by IP: behind a proxy, every client then shares the proxy's bucket. An empty
 * X-Forwarded-For, or one that names the address the request is limited by (a platform that
 * resolved the client itself), is no sign of a proxy left untrusted.
 *
 * The framework's trust setting is read on a limiter's first request, then only on requests
 * that carry X-Forwarded-For (the only ones trusting every proxy lets pick their address): a
 * request without it costs one header read, not the setting's lookup on every request.
 */
export class ProxyWarnings<Req extends RequestLike> {
  /** False once every warning was given (by this limiter or another): the hot path skips check. */
  armed: boolean
  private seenFirst = false
  private seenGeneration = generation

  constructor(
    private readonly setup: ProxySetup<Req>,
    private readonly logger: Logger,
    private readonly keysByIp: boolean,
  ) {
    this.armed = setup.proxyTrust !== undefined && !this.done()
  }

  check(req: Req): void {
    const field = this.forwardedFor(req)
    if (this.seenFirst && (field === undefined || field === '')) return
    this.seenFirst = true
    const trust = this.setup.proxyTrust!(req)
    if (trust === 'all') this.once('all', this.trustAllMessage())
    else if (this.keysByIp) this.checkForwarded(req, field, trust)
    if (this.seenGeneration !== generation) {
      this.seenGeneration = generation
      if (this.done()) this.armed = false
    }
  }

  private forwardedFor(req: Req): string | undefined {
    return this.setup.forwardedFor?.(req) ?? readHeader(req.headers, 'x-forwarded-for')
  }

  private checkForwarded(req: Req, field: string | undefined, trust: ProxyTrust): void {
    const entries = forwardedEntries(field)
    if (entries.length === 0) return
    const peer = this.setup.peerAddress?.(req)
    const address = this.setup.clientIp?.(req) ?? req.ip ?? peer
    if (address !== undefined && entries.includes(address)) return
    if (trust === 'none') this.once('untrusted', this.untrustedMessage(address))
    else if (peer !== undefined && address === peer) {
      this.once('mistrusted', this.mistrustedMessage(address))
    }
  }

  private done(): boolean {
    const name = this.setup.framework
    const kinds = this.keysByIp ? KINDS : KINDS.slice(0, 1)
    return kinds.every((kind) => warned.has(`${name}:${kind}`))
  }

  private once(kind: ProxyWarningKind, message: string): void {
    const id = `${this.setup.framework}:${kind}`
    if (warned.has(id)) return
    warned.add(id)
    generation++
    if (this.setup.report !== undefined) this.setup.report(kind, message)
    else this.logger.warn(message)
  }

  private trustAllMessage(): string {
    return `[sluice] ${this.setup.framework} trusts every proxy, so any client can pick its own IP with X-Forwarded-For and escape the rate limit. Trust only your own proxies: ${this.setup.proxyHint ?? ''} See docs/proxies.md.`
  }

  private untrustedMessage(ip: string | undefined): string {
    return `[sluice] a request carries X-Forwarded-For but ${this.setup.framework} does not trust its sender (${ip ?? 'no address'}), so it is limited by that address: behind a proxy, every client shares the proxy's IP (one bucket). If the app runs behind a proxy, ${this.setup.proxyHint ?? 'trust it.'} See docs/proxies.md.`
  }

  private mistrustedMessage(ip: string): string {
    return `[sluice] a request carries X-Forwarded-For, but ${this.setup.framework}'s proxy setting does not trust its sender (${ip}), so it is limited by that address: if ${ip} is your proxy, every client behind it shares one bucket. Trust the proxy the requests come through: ${this.setup.proxyHint ?? ''} See docs/proxies.md.`
  }
}
