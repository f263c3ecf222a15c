/**
 * Owns telling which library made the client the user passed, and choosing its adapter.
 */
import { fromIoredis } from './ioredis'
import { fromNodeRedis } from './node-redis'
import { fromUpstash } from './upstash'
import type {
  IoredisLikeClient,
  NodeRedisLikeClient,
  ScriptClient,
  UpstashLikeClient,
} from './types'

const has = (value: object, method: string): boolean =>
  typeof (value as Record<string, unknown>)[method] === 'function'

/**
 * The adapter for `client`, or undefined when it is none of the accepted clients. ioredis and
 * iovalkey are the clients with `evalshaBuffer`; node-redis, those with `evalSha`, a cluster
 * among them with `getSlotRandomNode`; @upstash/redis, those with `createScript` and `pipeline`
 * (checked last: ioredis has a `pipeline` too). Methods, not classes: two copies of a library (or a
 * proxy, as node-redis's clients are) still work.
 */
export function toScriptClient(client: unknown): ScriptClient | undefined {
  if (typeof client !== 'object' || client === null) return undefined
  if (has(client, 'evalshaBuffer') && has(client, 'evalBuffer') && has(client, 'del')) {
    return fromIoredis(client as IoredisLikeClient)
  }
  if (has(client, 'evalSha') && has(client, 'eval') && has(client, 'del')) {
    return fromNodeRedis(client as NodeRedisLikeClient, has(client, 'getSlotRandomNode'))
  }
  if (has(client, 'createScript') && has(client, 'pipeline') && has(client, 'evalsha')) {
    return fromUpstash(client as UpstashLikeClient)
  }
  return undefined
}
