/**
 * Owns the children on the host process (taken down when a jest worker exits), small utilities, and free ports.
 */
// node:timers, not the globals: a test using jest fake timers must not freeze our polling.
import { accessSync, constants, rmSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { delimiter, join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { runInThisContext } from 'node:vm'
import { CLUSTER_BUS_OFFSET, HOST, INSTALL_HINT, MAX_PORT, POLL_MS } from './types'

// ---------------------------------------------------------------------------------------------
// Tracking children on the host process

export interface ChildRegistry {
  pids: Set<number>
  dirs: Set<string>
}

export const REGISTRY = Symbol.for('sluice.testkit.children')
export type RegistryHost = NodeJS.Process & { [REGISTRY]?: ChildRegistry }

export let cachedRegistry: ChildRegistry | undefined

/**
 * Jest hands each test file a copy of `process` whose 'exit' never fires, so hooks go on the host
 * process. Storing the registry there also shares it (and its single set of hooks) between all
 * the test files a worker runs, each of which loads this module afresh.
 */
export function registry(): ChildRegistry {
  if (cachedRegistry) return cachedRegistry
  const host = hostProcess()
  let found = host[REGISTRY]
  if (!found) {
    found = { pids: new Set(), dirs: new Set() }
    host[REGISTRY] = found
    installCleanupHooks(host, found)
  }
  cachedRegistry = found
  return found
}

export function hostProcess(): RegistryHost {
  try {
    return runInThisContext('process') as RegistryHost
  } catch {
    return process as RegistryHost
  }
}

export function installCleanupHooks(host: RegistryHost, children: ChildRegistry): void {
  host.on('exit', () => killAllSync(host, children))
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      killAllSync(host, children)
      // Our listener disabled the default action; when no one else handles it, die as usual.
      if (host.listenerCount(signal) === 1) {
        host.removeListener(signal, onSignal)
        host.kill(host.pid, signal)
      }
    }
    host.on(signal, onSignal)
  }
}

export function killAllSync(host: RegistryHost, children: ChildRegistry): void {
  for (const pid of children.pids) {
    try {
      host.kill(pid, 'SIGKILL')
    } catch {
      // Already gone.
    }
  }
  children.pids.clear()
  for (const dir of children.dirs) rmSync(dir, { recursive: true, force: true })
  children.dirs.clear()
}

// ---------------------------------------------------------------------------------------------
// Small utilities

export const binaryCache = new Map<string, string>()

/** Absolute path of an executable on PATH, or an Error saying what to install. */
export function requireBinary(name: string): string {
  const cached = binaryCache.get(name)
  if (cached) return cached
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir || '.', name)
    if (isExecutableFile(candidate)) {
      binaryCache.set(name, candidate)
      return candidate
    }
  }
  throw new Error(`${name} was not found on PATH. ${INSTALL_HINT} (Debian/Ubuntu).`)
}

export function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** Real-time deadline on node:timers (immune to fake timers); never keeps the process alive. */
export function startDeadline(ms: number): { readonly expired: boolean; cancel(): void } {
  const abort = new AbortController()
  const deadline = { expired: false, cancel: () => abort.abort() }
  delay(ms, undefined, { signal: abort.signal, ref: false }).then(
    () => (deadline.expired = true),
    () => undefined,
  )
  return deadline
}

/** Polls `check` until it returns true (→ true) or `timeoutMs` passes (→ false). */
export async function pollUntil(
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = startDeadline(timeoutMs)
  try {
    while (!deadline.expired) {
      if (await check()) return true
      await delay(POLL_MS)
    }
    return false
  } finally {
    deadline.cancel()
  }
}

export async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  const abort = new AbortController()
  const timeout = delay(ms, false, { signal: abort.signal }).catch(() => false)
  try {
    return await Promise.race([promise.then(() => true), timeout])
  } finally {
    abort.abort()
  }
}

// ---------------------------------------------------------------------------------------------
// Ports

/** A port that was free on 127.0.0.1 a moment ago (bound to 0, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, HOST, () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => (port ? resolve(port) : reject(new Error('could not read a bound port'))))
    })
  })
}

export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.unref()
    server.once('error', () => resolve(false))
    server.listen(port, HOST, () => server.close(() => resolve(true)))
  })
}

/** A free port whose cluster bus port (port + 10000) is free too and not in `exclude`. */
export async function freeClusterPort(exclude: ReadonlySet<number> = new Set()): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await freePort()
    const bus = port + CLUSTER_BUS_OFFSET
    if (bus > MAX_PORT || exclude.has(port) || exclude.has(bus)) continue
    if (await isPortFree(bus)) return port
  }
  throw new Error('could not find a free port pair (port, port + 10000) for a Redis cluster node')
}
