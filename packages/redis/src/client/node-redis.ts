/**
 * Owns the adapter for node-redis (`redis` 5 and 6) clients and clusters.
 */
import type { NodeRedisLikeClient, ScriptClient } from './types'

interface ScriptOptions {
  keys: string[]
  arguments: string[]
}

/** The client's own methods, in their typed form (the same on a client and a cluster). */
interface NodeRedis {
  evalSha(sha: string, options: ScriptOptions): Promise<unknown>
  eval(lua: string, options: ScriptOptions): Promise<unknown>
  del(keys: string[]): Promise<unknown>
}

/** node-redis takes a script's keys and arguments apart; a cluster routes by the first key. */
function split(command: string[]): ScriptOptions {
  const end = 2 + Number(command[1])
  return { keys: command.slice(2, end), arguments: command.slice(end) }
}

/** A node-redis client or cluster (see NodeRedisLikeClient) as the store's ScriptClient. */
export function fromNodeRedis(client: NodeRedisLikeClient, isCluster: boolean): ScriptClient {
  const redis = client as unknown as NodeRedis
  return {
    library: 'node-redis',
    isCluster,
    evalsha: (...command) => redis.evalSha(command[0], split(command)),
    eval: (...command) => redis.eval(command[0], split(command)),
    del: (keys) => redis.del([...keys]),
  }
}
