// The one-time proxy-trust warnings: once per process and kind, however many limiters there are.
import { readHeader, type RequestLike, type Logger } from './keys'

/** What a framework's proxy setting trusts: nothing, some hops, or every X-Forwarded-For (spoofable). */
export type ProxyTrust = 'none' | 'some' | 'all'

/** How an adapter tells the warnings about its framework. */
export interface ProxySetup<Req> {
  framework: string
  proxyTrust?: (req: Req) => ProxyTrust
  /** The TCP peer's address (the socket's remote address). */
  peerAddress?: (req: Req) => string | undefined
  /** How to trust exactly one's own proxy in this framework, quoted in the warning. */
  proxyHint?: string
}

const warned = new Set<string>()

/** Forgets which warnings this process gave (tests of the warnings call it). */
export function resetProxyWarnings(): void {
  warned.clear()
}

/**
 * Warns once per process (per framework and kind) when the framework trusts every proxy, and
 * when a request carries X-Forwarded-For from a peer the framework did not trust while the
 * limiter keys by IP: behind a proxy, every client then shares the proxy's bucket.
 */
export class ProxyWarnings<Req extends RequestLike> {
  /** False once both warnings were given (by this limiter or another): the hot path skips check. */
  armed: boolean

  constructor(
    private readonly setup: ProxySetup<Req>,
    private readonly logger: Logger,
    private readonly keysByIp: boolean,
  ) {
    this.armed = setup.proxyTrust !== undefined && !this.done()
  }

  check(req: Req): void {
    const trust = this.setup.proxyTrust!(req)
    if (trust === 'all') this.once('all', this.trustAllMessage())
    else if (this.keysByIp && readHeader(req.headers, 'x-forwarded-for') !== undefined) {
      const peer = this.setup.peerAddress?.(req)
      if (trust === 'none' || (peer !== undefined && req.ip === peer)) {
        this.once('untrusted', this.untrustedMessage(req.ip ?? peer))
      }
    }
    if (this.done()) this.armed = false
  }

  private done(): boolean {
    const name = this.setup.framework
    return warned.has(`${name}:all`) && (!this.keysByIp || warned.has(`${name}:untrusted`))
  }

  private once(kind: string, message: string): void {
    const id = `${this.setup.framework}:${kind}`
    if (warned.has(id)) return
    warned.add(id)
    this.logger.warn(message)
  }

  private trustAllMessage(): string {
    return `[sluice] ${this.setup.framework} trusts every proxy, so any client can pick its own IP with X-Forwarded-For and escape the rate limit. Trust only your own proxies: ${this.setup.proxyHint ?? ''} See docs/proxies.md.`
  }

  private untrustedMessage(ip: string | undefined): string {
    return `[sluice] a request carries X-Forwarded-For but ${this.setup.framework} does not trust its sender (${ip ?? 'no address'}), so it is limited by that address: behind a proxy, every client shares the proxy's IP (one bucket). If the app runs behind a proxy, ${this.setup.proxyHint ?? 'trust it.'} See docs/proxies.md.`
  }
}
