/**
 * Owns one server child process: start on a free port, readiness, stop, kill, restart, pause.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import {
  closeSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pollUntil, registry, requireBinary, settlesWithin } from './children'
import { HOST, LOG_TAIL_CHARS, PORT_ATTEMPTS, RedisServer, START_TIMEOUT_MS } from './types'

// ---------------------------------------------------------------------------------------------
// A server child process

export interface ServerSpec {
  /** Binary name, used on PATH and in messages. */
  name: string
  /** The binary's path when it is not on PATH (Debian's Postgres); default: `name` on PATH. */
  binary?: string
  args(port: number, dir: string): string[]
  isReady(port: number, pid: number): Promise<boolean>
  pickPort(): Promise<number>
  /** How long stop() waits after SIGTERM before SIGKILL. */
  stopGraceMs: number
  /** Runs before each launch, given the server's dir (Postgres: initdb, once). */
  prepare?(dir: string): void
  /** What stop() and restart() send first (Postgres: SIGINT, a fast shutdown); default SIGTERM. */
  stopSignal?: NodeJS.Signals
  /**
   * The server is a parent with a child process per connection (Postgres's backends, each in
   * a session of its own): pause and resume signal the children too.
   */
  processTree?: boolean
  /** The user the server runs as (Postgres refuses root); default: this process's. */
  user?: { uid: number; gid: number }
}

/** Thrown when the server could not bind its port, so a first start can try another port. */
export class PortInUseError extends Error {}

export class ManagedServer {
  port = 0
  readonly dir: string
  private readonly binary: string
  private readonly logFile: string
  private logOffset = 0
  private child: ChildProcess | undefined
  private running = false
  private exited: Promise<void> = Promise.resolve()

  constructor(private readonly spec: ServerSpec) {
    this.binary = spec.binary ?? requireBinary(spec.name)
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
    await this.terminate(this.spec.stopSignal ?? 'SIGTERM')
    await this.launch()
  }

  kill(): Promise<void> {
    return this.terminate('SIGKILL')
  }

  /** The running process's id (a restart gives a new one); undefined when it is not running. */
  pid(): number | undefined {
    return this.running ? this.child?.pid : undefined
  }

  pause(): void {
    if (this.running) this.signal('SIGSTOP')
  }

  resume(): void {
    if (this.running) this.signal('SIGCONT')
  }

  /** Signals the server, and its children with `processTree` (the parent first: no new ones). */
  private signal(signal: NodeJS.Signals): void {
    const pid = this.child?.pid
    this.child?.kill(signal)
    if (this.spec.processTree !== true || pid === undefined) return
    for (const child of childrenOf(pid)) {
      try {
        process.kill(child, signal)
      } catch {
        // It exited meanwhile.
      }
    }
  }

  async stop(): Promise<void> {
    await this.terminate(this.spec.stopSignal ?? 'SIGTERM')
    rmSync(this.dir, { recursive: true, force: true })
    registry().dirs.delete(this.dir)
  }

  private async launch(): Promise<void> {
    // stop() removed the dir; a restart after it needs it back.
    mkdirSync(this.dir, { recursive: true })
    registry().dirs.add(this.dir)
    this.spec.prepare?.(this.dir)
    // The child writes straight to a file: no pipes for the parent to hold open or drain.
    const logFd = openSync(this.logFile, 'a')
    let child: ChildProcess
    try {
      this.logOffset = fstatSync(logFd).size
      child = spawn(this.binary, this.spec.args(this.port, this.dir), {
        stdio: ['ignore', logFd, logFd],
        ...this.spec.user,
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

  private async terminate(signal: NodeJS.Signals): Promise<void> {
    const child = this.child
    if (!child || !this.running) return
    child.ref() // keep the event loop alive while waiting for the exit
    try {
      this.signal('SIGCONT') // a paused server would not act on SIGTERM
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

/** The pids whose parent is `pid` (Linux: from /proc). */
function childrenOf(pid: number): number[] {
  const children: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === pid) children.push(Number(entry))
    } catch {
      // It exited meanwhile.
    }
  }
  return children
}

/** Starts a server, removing its temp dir when the start fails. */
export async function startManaged(spec: ServerSpec): Promise<ManagedServer> {
  const server = new ManagedServer(spec)
  try {
    await server.start()
    return server
  } catch (error) {
    await server.stop()
    throw error
  }
}

export function lifecycle(
  server: ManagedServer,
): Pick<RedisServer, 'stop' | 'kill' | 'restart' | 'pause' | 'resume' | 'pid'> {
  return {
    pid: () => server.pid(),
    stop: () => server.stop(),
    kill: () => server.kill(),
    restart: () => server.restart(),
    pause: () => server.pause(),
    resume: () => server.resume(),
  }
}
