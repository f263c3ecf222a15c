/**
 * Owns what the rules scenarios share: descriptors from the request path and an x-user header,
 * and a per-minute rate.
 */
import type { HttpRequestLike } from '@sluice/http'
import type { DescriptorEntry } from '@sluice/rules'

/** The request path, as every framework's request carries it. */
const path = (req: HttpRequestLike) => (req.url ?? '/').split('?')[0]

export const descriptors = (req: HttpRequestLike): DescriptorEntry[] => [
  ['route', path(req)],
  ['user', req.headers['x-user'] as string | undefined],
]

export const minute = (n: number) => ({ unit: 'minute' as const, requests_per_unit: n })
