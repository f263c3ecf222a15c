/**
 * Owns memcached servers.
 */
import { freePort } from './children'
import { lifecycle, startManaged } from './managed'
import { memcachedIsReady } from './probes'
import { HOST, MEMCACHED_STOP_GRACE_MS, MemcachedServer } from './types'

// ---------------------------------------------------------------------------------------------
// Memcached

export function memcachedArgs(port: number): string[] {
  const args = ['-l', HOST, '-p', String(port), '-U', '0', '-m', '64']
  // memcached refuses to run as root unless told which user to be.
  return process.getuid?.() === 0 ? [...args, '-u', 'root'] : args
}

/** A `memcached` on 127.0.0.1 and a free port (TCP only, 64 MB). */
export async function startMemcached(): Promise<MemcachedServer> {
  const server = await startManaged({
    name: 'memcached',
    args: (port) => memcachedArgs(port),
    isReady: memcachedIsReady,
    pickPort: freePort,
    stopGraceMs: MEMCACHED_STOP_GRACE_MS,
  })
  const { port } = server
  return { host: HOST, port, servers: `${HOST}:${port}`, ...lifecycle(server) }
}
