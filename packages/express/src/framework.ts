/**
 * Owns what both Express entries tell the core pipeline about Express: how its trust-proxy
 * setting reads, the TCP peer's address, and how to set the trust (quoted in warnings).
 */
import type { FrameworkDefaults, ProxyTrust } from '@sluice/http'
import type { Request } from 'express'

/** Documentation addresses (RFC 5737): a public sender no one lists as their proxy. */
const PUBLIC_PROBE = '203.0.113.7'
/** A hop no real chain of proxies reaches. */
const FAR_HOP = 99

function trustOf(req: Request): ProxyTrust {
  // A request made by hand (no app) has no proxy setting to read.
  if (typeof req.app?.get !== 'function') return 'none'
  const setting: unknown = req.app.get('trust proxy')
  if (setting === true) return 'all'
  if (!setting) return 'none'
  // Express compiles every setting into 'trust proxy fn' (address, hop): one that trusts a public
  // address even far down the chain trusts everything, whatever it was written as (a function
  // returning true, a hop count of 100).
  const trusts: unknown = req.app.get('trust proxy fn')
  if (typeof trusts === 'function' && trusts(PUBLIC_PROBE, 0) && trusts(PUBLIC_PROBE, FAR_HOP)) {
    return 'all'
  }
  return 'some'
}

const PROXY_HINT =
  "set app.set('trust proxy', '<your proxy's address or CIDR>'), e.g. '10.0.0.1' or 'loopback', or app.set('trust proxy', 1) for exactly one proxy hop."

/** The pipeline's view of Express; `customRejection`: the middleware answers 429s itself. */
export function expressDefaults(customRejection: boolean): FrameworkDefaults<Request> {
  return {
    framework: 'Express',
    resetStyle: 'epoch',
    proxyTrust: trustOf,
    peerAddress: (req) => req.socket?.remoteAddress,
    proxyHint: PROXY_HINT,
    customRejection,
  }
}
