/**
 * Launchers for real Redis and Memcached servers, one set per test file.
 *
 * Every server is a child process bound to 127.0.0.1 on a free port, with its own temp dir
 * (holding its log). Children are tracked on the host process so that a jest worker that exits
 * or is killed with SIGINT/SIGTERM/SIGHUP takes its servers down with it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
// node:timers, not the globals: a test using jest fake timers must not freeze our polling.
import { setTimeout as delay } from 'node:timers/promises'
import { runInThisContext } from 'node:vm'

export interface HostPort {
  host: string
  port: number
}

export interface RedisServer extends HostPort {
  /** `redis://127.0.0.1:<port>` */
  url: string
  /** SIGTERM, SIGKILL after a bounded wait; removes the temp dir. Idempotent. */
  stop(): Promise<void>
  /** SIGKILL and wait for the exit: simulates a crash. */
  kill(): Promise<void>
  /** Starts again on the same port (empty: nothing is persisted) and waits until it answers. */
  restart(): Promise<void>
  /** SIGSTOP: the process hangs with its connections open, as a stalled host does. */
  pause(): void
  /** SIGCONT: a paused process runs again and works through what queued meanwhile. */
  resume(): void
}

export interface StartRedisOptions {
  /** Extra `redis-server` arguments, appended last (so they override the defaults). */
  args?: string[]
}

export interface RedisClusterHandle {
  /** One entry per master, in the order given to `redis-cli --cluster create`. */
  nodes: HostPort[]
  /** The node processes, same order as `nodes` (to kill or restart one). */
  servers: RedisServer[]
  stop(): Promise<void>
}

export interface StartRedisClusterOptions {
  /** Number of masters, at least 3 (default 3). There are no replicas. */
  masters?: number
}

export interface MoveSlotOptions {
  /**
   * Called once the keys are on the target but the source still owns the slot: a key of the
   * slot read through the source now gets an ASK redirect.
   */
  afterKeysMigrated?: () => Promise<void> | void
}

export interface MemcachedServer extends HostPort {
  /** `127.0.0.1:<port>`, the form memjs `Client.create` expects. */
  servers: string
  stop(): Promise<void>
  kill(): Promise<void>
  restart(): Promise<void>
  pause(): void
  resume(): void
}

const HOST = '127.0.0.1'
const CLUSTER_BUS_OFFSET = 10000
const MAX_PORT = 65535
const START_TIMEOUT_MS = 10_000
const CLUSTER_TIMEOUT_MS = 20_000
const REDIS_STOP_GRACE_MS = 5_000
// memcached only notices SIGTERM on its 1 s clock tick, and has nothing to flush.
const MEMCACHED_STOP_GRACE_MS = 200
const PROBE_TIMEOUT_MS = 1_000
const COMMAND_TIMEOUT_MS = 5_000
const POLL_MS = 20
const PORT_ATTEMPTS = 5
const LOG_TAIL_CHARS = 2_000
const INSTALL_HINT = 'Install it with: apt-get install redis-server memcached'

// ---------------------------------------------------------------------------------------------
// Tracking children on the host process

interface ChildRegistry {
  pids: Set<number>
  dirs: Set<string>
}

const REGISTRY = Symbol.for('sluice.testkit.children')
type RegistryHost = NodeJS.Process & { [REGISTRY]?: ChildRegistry }

let cachedRegistry: ChildRegistry | undefined

/**
 * Jest hands each test file a copy of `process` whose 'exit' never fires, so hooks go on the host
 * process. Storing the registry there also shares it (and its single set of hooks) between all
 * the test files a worker runs, each of which loads this module afresh.
 */
function registry(): ChildRegistry {
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

function hostProcess(): RegistryHost {
  try {
    return runInThisContext('process') as RegistryHost
  } catch {
    return process as RegistryHost
  }
}

function installCleanupHooks(host: RegistryHost, children: ChildRegistry): void {
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

function killAllSync(host: RegistryHost, children: ChildRegistry): void {
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

const binaryCache = new Map<string, string>()

/** Absolute path of an executable on PATH, or an Error saying what to install. */
function requireBinary(name: string): string {
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

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** Real-time deadline on node:timers (immune to fake timers); never keeps the process alive. */
function startDeadline(ms: number): { readonly expired: boolean; cancel(): void } {
  const abort = new AbortController()
  const deadline = { expired: false, cancel: () => abort.abort() }
  delay(ms, undefined, { signal: abort.signal, ref: false }).then(
    () => (deadline.expired = true),
    () => undefined,
  )
  return deadline
}

/** Polls `check` until it returns true (→ true) or `timeoutMs` passes (→ false). */
async function pollUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
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

async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
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

function isPortFree(port: number): Promise<boolean> {
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

// ---------------------------------------------------------------------------------------------
// Raw TCP exchanges: a tiny RESP2 client and a memcached text probe, so that readiness checks
// have no retry logic of their own and testkit needs no client library.

/** Sends `payload` on a fresh connection, resolves once `parse` recognises a complete reply. */
function tcpExchange<T>(
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

/** A RESP2 reply; error replies are Error values. */
type RespValue = string | number | null | Error | RespValue[]

interface Parsed {
  value: RespValue
  end: number
}

function encodeCommand(args: readonly string[]): string {
  let out = `*${args.length}\r\n`
  for (const arg of args) out += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`
  return out
}

/** Parses one reply starting at `start`; undefined while the reply is incomplete. */
function parseResp(buf: Buffer, start: number): Parsed | undefined {
  const lineEnd = buf.indexOf('\r\n', start)
  if (lineEnd === -1) return undefined
  const line = buf.toString('utf8', start + 1, lineEnd)
  const next = lineEnd + 2
  switch (String.fromCharCode(buf[start])) {
    case '+':
      return { value: line, end: next }
    case '-':
      return { value: new Error(line), end: next }
    case ':':
      return { value: Number(line), end: next }
    case '$':
      return parseBulk(buf, Number(line), next)
    case '*':
      return parseArray(buf, Number(line), next)
    default:
      throw new Error(`unexpected RESP reply: ${JSON.stringify(buf.toString('utf8', start))}`)
  }
}

function parseBulk(buf: Buffer, length: number, start: number): Parsed | undefined {
  if (length < 0) return { value: null, end: start }
  if (buf.length < start + length + 2) return undefined
  return { value: buf.toString('utf8', start, start + length), end: start + length + 2 }
}

function parseArray(buf: Buffer, count: number, start: number): Parsed | undefined {
  if (count < 0) return { value: null, end: start }
  const items: RespValue[] = []
  let offset = start
  for (let i = 0; i < count; i++) {
    const item = parseResp(buf, offset)
    if (!item) return undefined
    items.push(item.value)
    offset = item.end
  }
  return { value: items, end: offset }
}

function parseReplies(buf: Buffer, count: number): RespValue[] | undefined {
  const replies: RespValue[] = []
  let offset = 0
  while (replies.length < count) {
    const reply = parseResp(buf, offset)
    if (!reply) return undefined
    replies.push(reply.value)
    offset = reply.end
  }
  return replies
}

function redisPipeline(
  node: HostPort,
  commands: readonly (readonly string[])[],
  timeoutMs = COMMAND_TIMEOUT_MS,
): Promise<RespValue[]> {
  const payload = commands.map(encodeCommand).join('')
  return tcpExchange(node, payload, (data) => parseReplies(data, commands.length), timeoutMs)
}

/** One command on a fresh connection; an error reply is thrown. */
async function redisCommand(node: HostPort, args: readonly string[]): Promise<RespValue> {
  const [reply] = await redisPipeline(node, [args])
  if (reply instanceof Error) {
    throw new Error(`${args.join(' ')} on ${node.host}:${node.port} failed: ${reply.message}`)
  }
  return reply
}

/** A `field:value` line of an INFO-style reply. */
function infoField(info: RespValue, field: string): string | undefined {
  if (typeof info !== 'string') return undefined
  return new RegExp(`^${field}:(.*?)\\r?$`, 'm').exec(info)?.[1]
}

/**
 * Answers PING, and is our child: checking the pid means a server of another jest worker that
 * won a race for the port is never mistaken for ours.
 */
async function redisIsReady(port: number, pid: number): Promise<boolean> {
  const node = { host: HOST, port }
  const [pong, info] = await redisPipeline(node, [['PING'], ['INFO', 'server']], PROBE_TIMEOUT_MS)
  return pong === 'PONG' && infoField(info, 'process_id') === String(pid)
}

/** Accepts `version`, and `stats` says it is our child (see redisIsReady). */
async function memcachedIsReady(port: number, pid: number): Promise<boolean> {
  const node = { host: HOST, port }
  const parse = (data: Buffer): string | undefined => {
    const text = data.toString('utf8')
    return /^(END|ERROR)\r$/m.test(text) ? text : undefined
  }
  const reply = await tcpExchange(node, 'version\r\nstats\r\n', parse, PROBE_TIMEOUT_MS)
  return reply.startsWith('VERSION ') && new RegExp(`^STAT pid ${pid}\\r$`, 'm').test(reply)
}

// ---------------------------------------------------------------------------------------------
// A server child process

interface ServerSpec {
  /** Binary name, used on PATH and in messages. */
  name: string
  args(port: number, dir: string): string[]
  isReady(port: number, pid: number): Promise<boolean>
  pickPort(): Promise<number>
  /** How long stop() waits after SIGTERM before SIGKILL. */
  stopGraceMs: number
}

/** Thrown when the server could not bind its port, so a first start can try another port. */
class PortInUseError extends Error {}

class ManagedServer {
  port = 0
  readonly dir: string
  private readonly binary: string
  private readonly logFile: string
  private logOffset = 0
  private child: ChildProcess | undefined
  private running = false
  private exited: Promise<void> = Promise.resolve()

  constructor(private readonly spec: ServerSpec) {
    this.binary = requireBinary(spec.name)
    this.dir = mkdtempSync(join(tmpdir(), `sluice-${spec.name}-`))
    this.logFile = join(this.dir, 'server.log')
    registry().dirs.add(this.dir)
  }

  /** First start; a port taken meanwhile (by another worker) is replaced by a fresh one. */
  async start(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      this.port = await this.spec.pickPort()
      try {
        await this.launch()
        return
      } catch (error) {
        if (!(error instanceof PortInUseError) || attempt >= PORT_ATTEMPTS) throw error
      }
    }
  }

  async restart(): Promise<void> {
    await this.terminate('SIGTERM')
    await this.launch()
  }

  kill(): Promise<void> {
    return this.terminate('SIGKILL')
  }

  pause(): void {
    if (this.running) this.child?.kill('SIGSTOP')
  }

  resume(): void {
    if (this.running) this.child?.kill('SIGCONT')
  }

  async stop(): Promise<void> {
    await this.terminate('SIGTERM')
    rmSync(this.dir, { recursive: true, force: true })
    registry().dirs.delete(this.dir)
  }

  private async launch(): Promise<void> {
    // stop() removed the dir; a restart after it needs it back.
    mkdirSync(this.dir, { recursive: true })
    registry().dirs.add(this.dir)
    // The child writes straight to a file: no pipes for the parent to hold open or drain.
    const logFd = openSync(this.logFile, 'a')
    let child: ChildProcess
    try {
      this.logOffset = fstatSync(logFd).size
      child = spawn(this.binary, this.spec.args(this.port, this.dir), {
        stdio: ['ignore', logFd, logFd],
      })
    } finally {
      closeSync(logFd)
    }
    this.track(child)
    await this.waitUntilReady(child)
  }

  private track(child: ChildProcess): void {
    this.child = child
    this.running = true
    const pid = child.pid
    if (pid !== undefined) registry().pids.add(pid)
    this.exited = new Promise((resolve) => {
      const onGone = (): void => {
        this.running = false
        if (pid !== undefined) registry().pids.delete(pid)
        resolve()
      }
      child.once('exit', onGone)
      // A failed spawn emits 'error' and no 'exit'.
      child.once('error', () => pid === undefined && onGone())
    })
    // A forgotten server must not keep jest alive; the exit hook kills it.
    child.unref()
  }

  private async waitUntilReady(child: ChildProcess): Promise<void> {
    const pid = child.pid ?? -1
    const ready = await pollUntil(async () => {
      if (!this.running) throw this.startFailure('exited while starting')
      return this.spec.isReady(this.port, pid).catch(() => false)
    }, START_TIMEOUT_MS)
    if (ready) return
    await this.terminate('SIGKILL')
    throw this.startFailure(`did not answer within ${START_TIMEOUT_MS} ms`)
  }

  private async terminate(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const child = this.child
    if (!child || !this.running) return
    child.ref() // keep the event loop alive while waiting for the exit
    try {
      child.kill('SIGCONT') // a paused server would not act on SIGTERM
      child.kill(signal)
      if (signal !== 'SIGKILL' && !(await settlesWithin(this.exited, this.spec.stopGraceMs))) {
        child.kill('SIGKILL')
      }
      await this.exited
    } finally {
      child.unref()
    }
  }

  private startFailure(reason: string): Error {
    const tail = this.logTail()
    const message =
      `${this.spec.name} on ${HOST}:${this.port} ${reason}.\n` +
      `--- last output of ${this.spec.name} ---\n${tail || '(none)'}`
    return /address already in use/i.test(tail) ? new PortInUseError(message) : new Error(message)
  }

  private logTail(): string {
    try {
      const output = readFileSync(this.logFile).subarray(this.logOffset).toString('utf8')
      return output.slice(-LOG_TAIL_CHARS).trim()
    } catch {
      return ''
    }
  }
}

/** Starts a server, removing its temp dir when the start fails. */
async function startManaged(spec: ServerSpec): Promise<ManagedServer> {
  const server = new ManagedServer(spec)
  try {
    await server.start()
    return server
  } catch (error) {
    await server.stop()
    throw error
  }
}

function lifecycle(
  server: ManagedServer,
): Pick<RedisServer, 'stop' | 'kill' | 'restart' | 'pause' | 'resume'> {
  return {
    stop: () => server.stop(),
    kill: () => server.kill(),
    restart: () => server.restart(),
    pause: () => server.pause(),
    resume: () => server.resume(),
  }
}

// ---------------------------------------------------------------------------------------------
// Redis

function redisArgs(port: number, dir: string): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--daemonize',
    'no',
    // Lets tests use DEBUG SLEEP to simulate a slow server.
    '--enable-debug-command',
    'local',
  ]
}

async function startRedisWith(
  extraArgs: (dir: string) => string[],
  pickPort: () => Promise<number>,
): Promise<RedisServer> {
  const server = await startManaged({
    name: 'redis-server',
    args: (port, dir) => [...redisArgs(port, dir), ...extraArgs(dir)],
    isReady: redisIsReady,
    pickPort,
    stopGraceMs: REDIS_STOP_GRACE_MS,
  })
  const { port } = server
  return { host: HOST, port, url: `redis://${HOST}:${port}`, ...lifecycle(server) }
}

/** A standalone `redis-server` on 127.0.0.1 and a free port, without persistence. */
export function startRedis(opts: StartRedisOptions = {}): Promise<RedisServer> {
  const args = opts.args ?? []
  return startRedisWith(() => args, freePort)
}

// ---------------------------------------------------------------------------------------------
// Redis Sentinel

export interface RedisSentinel extends HostPort {
  /** The name the sentinel monitors the master under (ioredis's `name` option). */
  name: string
  /** SIGTERM, SIGKILL after a bounded wait; removes the temp dir. Idempotent. */
  stop(): Promise<void>
}

/**
 * A `redis-server --sentinel` on 127.0.0.1 and a free port, monitoring `master` under `name`
 * (quorum 1). Sentinel rewrites its configuration file, so it gets one of its own in its dir.
 */
export async function startRedisSentinel(
  master: HostPort,
  name = 'sluice',
): Promise<RedisSentinel> {
  const server = await startManaged({
    name: 'redis-server',
    args: (port, dir) => {
      const config = join(dir, 'sentinel.conf')
      writeFileSync(
        config,
        [
          `port ${port}`,
          `bind ${HOST}`,
          `dir ${dir}`,
          `sentinel monitor ${name} ${master.host} ${master.port} 1`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 5000`,
          '',
        ].join('\n'),
      )
      return [config, '--sentinel']
    },
    isReady: redisIsReady,
    pickPort: freePort,
    stopGraceMs: REDIS_STOP_GRACE_MS,
  })
  return { host: HOST, port: server.port, name, stop: () => server.stop() }
}

// ---------------------------------------------------------------------------------------------
// Redis Cluster

function clusterNodeArgs(dir: string): string[] {
  return [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    join(dir, 'nodes.conf'),
    '--cluster-node-timeout',
    '2000',
  ]
}

/** Cluster masters (no replicas) covering all 16384 slots, ready once every node says ok. */
export async function startRedisCluster(
  opts: StartRedisClusterOptions = {},
): Promise<RedisClusterHandle> {
  const masters = opts.masters ?? 3
  if (!Number.isInteger(masters) || masters < 3) {
    throw new Error(`a Redis cluster needs at least 3 masters, got ${masters}`)
  }
  const cli = requireBinary('redis-cli')
  const servers = await startClusterNodes(masters)
  const nodes = servers.map(({ host, port }) => ({ host, port }))
  const stop = async (): Promise<void> => {
    await Promise.all(servers.map((server) => server.stop()))
  }
  try {
    const output = await createCluster(cli, nodes)
    await waitForClusterOk(nodes, output)
  } catch (error) {
    await stop()
    throw error
  }
  return { nodes, servers, stop }
}

async function startClusterNodes(count: number): Promise<RedisServer[]> {
  const taken = new Set<number>()
  const pickPort = async (): Promise<number> => {
    const port = await freeClusterPort(taken)
    taken.add(port).add(port + CLUSTER_BUS_OFFSET)
    return port
  }
  const started = await Promise.allSettled(
    Array.from({ length: count }, () => startRedisWith(clusterNodeArgs, pickPort)),
  )
  const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
  const failure = started.find((result) => result.status === 'rejected')
  if (failure) {
    await Promise.all(servers.map((server) => server.stop()))
    throw failure.reason
  }
  return servers
}

/** `redis-cli --cluster create`; resolves with its output (for error messages later). */
function createCluster(cli: string, nodes: HostPort[]): Promise<string> {
  const args = [
    '--cluster',
    'create',
    ...nodes.map((node) => `${node.host}:${node.port}`),
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ]
  return new Promise((resolve, reject) => {
    execFile(cli, args, { timeout: CLUSTER_TIMEOUT_MS }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`.trim()
      if (error) reject(new Error(`redis-cli --cluster create failed: ${error.message}\n${output}`))
      else resolve(output)
    })
  })
}

async function waitForClusterOk(nodes: HostPort[], createOutput: string): Promise<void> {
  const everyNodeOk = async (): Promise<boolean> => {
    try {
      const infos = await Promise.all(nodes.map((node) => redisCommand(node, ['CLUSTER', 'INFO'])))
      return infos.every(
        (info) =>
          infoField(info, 'cluster_state') === 'ok' &&
          infoField(info, 'cluster_known_nodes') === String(nodes.length),
      )
    } catch {
      return false
    }
  }
  if (await pollUntil(everyNodeOk, CLUSTER_TIMEOUT_MS)) return
  throw new Error(
    `the Redis cluster did not reach cluster_state:ok within ${CLUSTER_TIMEOUT_MS} ms.\n` +
      `redis-cli output:\n${createOutput}`,
  )
}

/** The hash slot of a key (CRC16/XMODEM of the key or its non-empty `{hash tag}`, mod 16384). */
export function keySlot(key: string | Buffer): number {
  const bytes = typeof key === 'string' ? Buffer.from(key) : key
  const open = bytes.indexOf('{')
  const close = open === -1 ? -1 : bytes.indexOf('}', open + 1)
  const hashed = close > open + 1 ? bytes.subarray(open + 1, close) : bytes
  return crc16(hashed) % 16384
}

function crc16(bytes: Buffer): number {
  let crc = 0
  for (const byte of bytes) {
    crc ^= byte << 8
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
    }
  }
  return crc
}

/** Index in `handle.nodes` of the node that owns `slot`, as node 0 sees it. */
export async function slotOwner(handle: RedisClusterHandle, slot: number): Promise<number> {
  const ranges = await redisCommand(handle.nodes[0], ['CLUSTER', 'SLOTS'])
  for (const range of Array.isArray(ranges) ? ranges : []) {
    if (!Array.isArray(range)) continue
    const [start, end, master] = range
    if (typeof start !== 'number' || typeof end !== 'number' || !Array.isArray(master)) continue
    if (slot < start || slot > end) continue
    const index = handle.nodes.findIndex((node) => node.port === master[1])
    if (index !== -1) return index
  }
  throw new Error(`no node of the cluster owns slot ${slot}`)
}

/**
 * Migrates `slot` and all its keys from node `fromIndex` to node `toIndex` the way a reshard
 * does (SETSLOT IMPORTING/MIGRATING, MIGRATE ... KEYS, SETSLOT NODE), so clients holding the
 * old slot map get MOVED afterwards (and ASK inside `afterKeysMigrated`). Resolves with the
 * number of keys moved.
 */
export async function moveSlot(
  handle: RedisClusterHandle,
  slot: number,
  fromIndex: number,
  toIndex: number,
  opts: MoveSlotOptions = {},
): Promise<number> {
  const source = clusterNode(handle, fromIndex)
  const target = clusterNode(handle, toIndex)
  if (fromIndex === toIndex) throw new Error('moveSlot: source and target are the same node')
  if (!Number.isInteger(slot) || slot < 0 || slot > 16383) {
    throw new Error(`moveSlot: invalid slot ${slot}`)
  }
  const sourceId = String(await redisCommand(source, ['CLUSTER', 'MYID']))
  const targetId = String(await redisCommand(target, ['CLUSTER', 'MYID']))
  await redisCommand(target, ['CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId])
  await redisCommand(source, ['CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId])
  try {
    const moved = await migrateKeys(source, target, slot)
    await opts.afterKeysMigrated?.()
    return moved
  } finally {
    // Even if the callback threw: never leave the cluster half-migrated.
    await assignSlot(handle, slot, targetId, [toIndex, fromIndex])
  }
}

function clusterNode(handle: RedisClusterHandle, index: number): HostPort {
  const node = handle.nodes[index]
  if (!node) throw new Error(`moveSlot: no node at index ${index}`)
  return node
}

async function migrateKeys(source: HostPort, target: HostPort, slot: number): Promise<number> {
  let moved = 0
  for (;;) {
    const keys = await redisCommand(source, ['CLUSTER', 'GETKEYSINSLOT', String(slot), '100'])
    if (!Array.isArray(keys) || keys.length === 0) return moved
    const names = keys.map(String)
    const migrate = ['MIGRATE', target.host, String(target.port), '', '0', '5000', 'KEYS']
    await redisCommand(source, [...migrate, ...names])
    moved += names.length
  }
}

/** SETSLOT NODE on the target first, then the source, then the others (as redis-cli does). */
async function assignSlot(
  handle: RedisClusterHandle,
  slot: number,
  nodeId: string,
  firstIndexes: number[],
): Promise<void> {
  const others = handle.nodes.map((_, index) => index).filter((i) => !firstIndexes.includes(i))
  for (const index of [...firstIndexes, ...others]) {
    await redisCommand(handle.nodes[index], ['CLUSTER', 'SETSLOT', String(slot), 'NODE', nodeId])
  }
}

// ---------------------------------------------------------------------------------------------
// Memcached

function memcachedArgs(port: number): string[] {
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
