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
  readonly options?: { readonly enableAutoPipelining?: boolean }
  pipeline?(): IoredisPipeline
}

/** A pipeline: commands queued, written together by `exec`. */
interface IoredisPipeline {
  evalshaBuffer(...command: string[]): IoredisPipeline
  evalBuffer(...command: string[]): IoredisPipeline
  exec(): Promise<[Error | null, unknown][] | null>
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
    direct: direct(redis),
  }
}

/**
 * With auto-pipelining on, EVALSHA and EVAL sent as a pipeline of one, which `exec` writes to
 * the connection at once. A batch is sent when it is full, and nothing more will join it;
 * auto-pipelining held it until the synchronous work of the tick ended (the rest of the turn's
 * decisions made), so Redis sat idle while Node made the next batches, then Node while Redis
 * ran them all (docs/redis.md, "Batches"). Standalone and Sentinel only (a Cluster runs no
 * batches).
 */
function direct(redis: Ioredis): ScriptClient | undefined {
  if (
    redis.isCluster ||
    redis.options?.enableAutoPipelining !== true ||
    typeof redis.pipeline !== 'function'
  ) {
    return undefined
  }
  const pipeline = redis.pipeline.bind(redis) as () => IoredisPipeline
  const send =
    (name: 'evalshaBuffer' | 'evalBuffer') =>
    (...command: string[]): Promise<unknown> => {
      const one = pipeline()
      one[name](...command)
      return one.exec().then(onlyReply)
    }
  return {
    library: 'ioredis',
    isCluster: false,
    evalsha: send('evalshaBuffer'),
    eval: send('evalBuffer'),
    del: (keys) => redis.del(...keys),
  }
}

/** The one reply of a pipeline of one command: its value, or its error thrown. */
function onlyReply(replies: [Error | null, unknown][] | null): unknown {
  const [error, reply] = (replies as [Error | null, unknown][])[0]
  if (error !== null) throw error
  return reply
}
