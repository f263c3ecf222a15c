/**
 * Owns the adapter for `@upstash/redis` (the REST client of edge runtimes): commands of one
 * microtask sent as one `/pipeline` request, each failing or succeeding alone.
 */
import { onCloudflareWorkers } from '@sluice/core/web'
import type { ScriptClient, UpstashLikeClient } from './types'

/** What a pipeline replies per command with `keepErrors`. */
interface PipelineReply {
  readonly error?: string
  readonly result: unknown
}

/** A pipeline of the client: commands queued, sent together by `exec` (POST /pipeline). */
interface UpstashPipeline {
  evalsha(sha: string, keys: string[], args: string[]): UpstashPipeline
  eval(lua: string, keys: string[], args: string[]): UpstashPipeline
  del(...keys: string[]): UpstashPipeline
  exec(options: { keepErrors: true }): Promise<PipelineReply[]>
}

interface Upstash {
  pipeline(): UpstashPipeline
  /** The client's HTTP client; `hasCredentials` false when url or token is missing. */
  readonly client?: { readonly hasCredentials?: unknown }
}

/** One command waiting for the next pipeline: how to add it, its size, and whom to tell. */
interface Queued {
  add(pipeline: UpstashPipeline): void
  /** Characters of its arguments: about its bytes in the request's JSON. */
  readonly size: number
  resolve(reply: unknown): void
  reject(error: unknown): void
}

/** Most commands in one request. */
const MAX_PIPELINE = 64

/**
 * Most characters of arguments in one request (a single larger command still goes alone):
 * Upstash refuses a request past its size limit (1 MB on the free plan), and after the server
 * lost its scripts every decision in flight retries with an EVAL of the whole script (20-30 KB
 * for the shared ones), 64 of which made a request of 1.3-1.9 MB that failed every decision.
 */
const MAX_PIPELINE_CHARS = 512 * 1024

/** The commands of the next request: up to MAX_PIPELINE, and MAX_PIPELINE_CHARS (one at least). */
function nextBatch(queue: Queued[]): Queued[] {
  let count = 0
  let chars = 0
  while (count < queue.length && count < MAX_PIPELINE) {
    chars += queue[count].size
    if (count > 0 && chars > MAX_PIPELINE_CHARS) break
    count++
  }
  return queue.splice(0, count)
}

/** Characters of a command's arguments. */
function sizeOf(command: readonly string[]): number {
  let size = 0
  for (const argument of command) size += argument.length + 3
  return size
}

/**
 * How long the next request waits for the one in flight before it goes anyway: requests go one
 * at a time so that commands run in the order they were made (concurrent HTTP requests reach
 * Redis in any order), but one that hangs must not hold every later decision.
 */
const ORDER_WAIT_MS = 1000

/** Splits `sha numkeys ...keys ...args` into Upstash's `(sha, keys, args)`. */
function split(command: readonly string[]): [string, string[], string[]] {
  const end = 2 + Number(command[1])
  return [command[0], command.slice(2, end), command.slice(end)]
}

/**
 * The first line of an Upstash error: the client appends the whole request (scripts included)
 * after ", command was:", which helps no one reading a log.
 */
function clearError(error: unknown): Error {
  if (!(error instanceof Error)) return new Error(`Upstash REST request failed: ${String(error)}`)
  const message = error.message.split(', command was:')[0]
  if (/unauthori[sz]ed|WRONGPASS|NOAUTH/i.test(message)) {
    return new Error(
      `Upstash REST request refused (${message}): check the client's token (UPSTASH_REDIS_REST_TOKEN)`,
      { cause: error },
    )
  }
  return new Error(`Upstash REST request failed: ${message}`, { cause: error })
}

/**
 * An `@upstash/redis` `Redis` (from `new Redis({ url, token })` or `Redis.fromEnv()`) as the
 * store's ScriptClient. The commands made in one microtask (a batch, the decisions made
 * together), or while the previous request was in flight, go as one POST to `/pipeline`, never
 * through MULTI: Upstash runs a pipeline's commands in order, and each script is atomic on its
 * own, as on any Redis. One request at a time keeps the order commands were made in (except on
 * Workers, see perRequest). A
 * command's Redis error (NOSCRIPT, WRONGTYPE) rejects that command only; a failed request
 * (HTTP error, network, bad token) rejects every command in it.
 */
export function fromUpstash(client: UpstashLikeClient): ScriptClient {
  const redis = client as unknown as Upstash
  const missing = redis.client?.hasCredentials === false
  // On Workers a request that waits on I/O another request started is cancelled as hung, so
  // each request's commands go in requests of their own.
  const perRequest = onCloudflareWorkers()
  const queue: Queued[] = []
  /** The request in flight, settled or given up on after ORDER_WAIT_MS; undefined: none. */
  let inFlight: Promise<void> | undefined
  let scheduled = false

  const flush = (): void => {
    scheduled = false
    const batch = nextBatch(queue)
    if (batch.length === 0) return
    const done = send(batch)
    if (perRequest) {
      if (queue.length > 0) flush()
      return
    }
    let timer: ReturnType<typeof setTimeout> | undefined
    const current: Promise<void> = Promise.race([
      done,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ORDER_WAIT_MS)
      }),
    ]).then(() => {
      clearTimeout(timer)
      if (inFlight === current) inFlight = undefined
      if (queue.length > 0 && !scheduled) schedule()
    })
    inFlight = current
  }

  /** The next flush: at the end of this microtask, or when the request in flight settles. */
  const schedule = (): void => {
    scheduled = true
    if (inFlight === undefined) queueMicrotask(flush)
    else void inFlight.then(() => (scheduled ? flush() : undefined))
  }

  const send = (batch: readonly Queued[]): Promise<void> => {
    let replies: Promise<PipelineReply[]>
    try {
      const pipeline = redis.pipeline()
      for (const command of batch) command.add(pipeline)
      replies = pipeline.exec({ keepErrors: true })
    } catch (error) {
      replies = Promise.reject(error)
    }
    return replies.then(
      (results) => {
        for (let i = 0; i < batch.length; i++) {
          const { error, result } = results[i] ?? { error: 'no reply in the pipeline' }
          if (error !== undefined && error !== null) batch[i].reject(new Error(error))
          else batch[i].resolve(result)
        }
      },
      (error: unknown) => {
        const clear = clearError(error)
        for (const command of batch) command.reject(clear)
      },
    )
  }

  const enqueue = (add: Queued['add'], size: number): Promise<unknown> => {
    if (missing) {
      return Promise.reject(
        new Error(
          'the @upstash/redis client has no url or token: set UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN (Redis.fromEnv) or pass { url, token }',
        ),
      )
    }
    return new Promise((resolve, reject) => {
      queue.push({ add, size, resolve, reject })
      if (!scheduled) schedule()
    })
  }

  return {
    library: '@upstash/redis',
    isCluster: false,
    perRequest,
    evalsha: (...command) => enqueue((p) => p.evalsha(...split(command)), sizeOf(command)),
    eval: (...command) => enqueue((p) => p.eval(...split(command)), sizeOf(command)),
    del: (keys) => enqueue((p) => p.del(...keys), sizeOf(keys)),
  }
}
