/**
 * Owns the adapter for ioredis and iovalkey clients (standalone, Sentinel, Cluster).
 */
import type { IoredisLikeClient, ScriptClient } from './types'

/** The client's own methods, in their typed form. */
interface Ioredis {
  evalshaBuffer(...command: string[]): Promise<unknown>
  evalBuffer(...command: string[]): Promise<unknown>
  del(...keys: string[]): Promise<unknown>
  readonly isCluster: boolean
}

/**
 * EVAL and EVALSHA in their Buffer-reply form, which auto-pipeline like any command when the
 * client does: a flat script replies with integers only, which need no decoding, and the
 * string form would walk every reply looking for Buffers to turn into strings (a few percent
 * of a decision's CPU in the profile). Bound, not wrapped: a call costs what calling the
 * client directly does.
 */
export function fromIoredis(client: IoredisLikeClient): ScriptClient {
  const redis = client as unknown as Ioredis
  return {
    library: 'ioredis',
    isCluster: redis.isCluster === true,
    evalsha: redis.evalshaBuffer.bind(redis),
    eval: redis.evalBuffer.bind(redis),
    del: (keys) => redis.del(...keys),
  }
}
