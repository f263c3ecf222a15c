/**
 * Owns talking to the servers: Redis through ioredis, memcached through a text probe.
 */
import { connect } from 'node:net'
import { Redis } from 'ioredis'
import { COMMAND_TIMEOUT_MS, HOST, HostPort, PROBE_TIMEOUT_MS } from './types'

// ---------------------------------------------------------------------------------------------
// Talking to the servers: Redis through ioredis, one short connection per exchange (no retries,
// no offline queue, so a probe fails fast), and memcached through a text probe on a socket.

/** Sends `payload` on a fresh connection, resolves once `parse` recognises a complete reply. */
export function tcpExchange<T>(
  node: HostPort,
  payload: string | Buffer,
  parse: (data: Buffer) => T | undefined,
  timeoutMs: number,
): Promise<T> {
  return new Promise((resolve, reject) => {
    let data = Buffer.alloc(0)
    const socket = connect({ host: node.host, port: node.port })
    const fail = (error: Error): void => {
      socket.destroy()
      reject(error)
    }
    socket.setTimeout(timeoutMs, () =>
      fail(new Error(`no reply from ${node.host}:${node.port} within ${timeoutMs} ms`)),
    )
    socket.on('error', fail)
    socket.on('end', () => fail(new Error(`${node.host}:${node.port} closed the connection`)))
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      let reply: T | undefined
      try {
        reply = parse(data)
      } catch (error) {
        fail(error instanceof Error ? error : new Error(String(error)))
        return
      }
      if (reply === undefined) return
      socket.destroy()
      resolve(reply)
    })
    socket.write(payload)
  })
}

/** Commands on one fresh connection, in order; an error reply rejects, naming the command. */
export async function redisCommands(
  node: HostPort,
  commands: readonly (readonly string[])[],
  timeoutMs = COMMAND_TIMEOUT_MS,
): Promise<unknown[]> {
  const client = new Redis({
    host: node.host,
    port: node.port,
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    enableReadyCheck: false,
  })
  client.on('error', () => {})
  try {
    await client.connect()
    const replies: unknown[] = []
    for (const [name, ...args] of commands) {
      try {
        replies.push(await client.call(name, ...args))
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error)
        throw new Error(
          `${[name, ...args].join(' ')} on ${node.host}:${node.port} failed: ${reason}`,
          { cause: error },
        )
      }
    }
    return replies
  } finally {
    client.disconnect()
  }
}

/** One command on a fresh connection; an error reply is thrown. */
export async function redisCommand(node: HostPort, args: readonly string[]): Promise<unknown> {
  const [reply] = await redisCommands(node, [args])
  return reply
}

/** A `field:value` line of an INFO-style reply. */
export function infoField(info: unknown, field: string): string | undefined {
  if (typeof info !== 'string') return undefined
  return new RegExp(`^${field}:(.*?)\\r?$`, 'm').exec(info)?.[1]
}

/**
 * Answers PING, and is our child: checking the pid means a server of another jest worker that
 * won a race for the port is never mistaken for ours.
 */
export async function redisIsReady(port: number, pid: number): Promise<boolean> {
  const node = { host: HOST, port }
  const [pong, info] = await redisCommands(node, [['PING'], ['INFO', 'server']], PROBE_TIMEOUT_MS)
  return pong === 'PONG' && infoField(info, 'process_id') === String(pid)
}

/** Accepts `version`, and `stats` says it is our child (see redisIsReady). */
export async function memcachedIsReady(port: number, pid: number): Promise<boolean> {
  const node = { host: HOST, port }
  const parse = (data: Buffer): string | undefined => {
    const text = data.toString('utf8')
    return /^(END|ERROR)\r$/m.test(text) ? text : undefined
  }
  const reply = await tcpExchange(node, 'version\r\nstats\r\n', parse, PROBE_TIMEOUT_MS)
  return reply.startsWith('VERSION ') && new RegExp(`^STAT pid ${pid}\\r$`, 'm').test(reply)
}
