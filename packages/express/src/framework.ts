/**
 * Owns what both Express entries tell the core pipeline about Express: how its trust-proxy
 * setting reads, the TCP peer's address, and how to set the trust (quoted in warnings).
 */
import type { FrameworkDefaults, ProxyTrust } from '@sluice/core'
import type { Request } from 'express'

function trustOf(req: Request): ProxyTrust {
  // A request made by hand (no app) has no proxy setting to read.
  const setting: unknown = typeof req.app?.get === 'function' ? req.app.get('trust proxy') : false
  if (setting === true) return 'all'
  return setting ? 'some' : 'none'
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
