/**
 * Owns PostgreSQL servers: initdb into the server's temp dir, then `postgres` on a free loopback
 * port, run as an unprivileged user when the tests run as root (Postgres refuses root).
 */
import { execFileSync } from 'node:child_process'
import { chownSync, existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { Client } from 'pg'
import { freePort, requireBinary } from './children'
import { lifecycle, startManaged } from './managed'
import {
  HOST,
  POSTGRES_STOP_GRACE_MS,
  PROBE_TIMEOUT_MS,
  type PostgresServer,
  type StartPostgresOptions,
} from './types'

const USER = 'sluice'

/** Test speed over durability, loopback only, the Unix socket in the server's own dir. */
const DEFAULT_SETTINGS: Record<string, string> = {
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_connections: '200',
  shared_buffers: '64MB',
}

/**
 * A server binary: on PATH, else the newest in Debian's /usr/lib/postgresql/<version>/bin
 * (where `apt-get install postgresql` leaves them).
 */
function binary(name: string): string {
  try {
    return requireBinary(name)
  } catch (error) {
    const root = '/usr/lib/postgresql'
    const versions = existsSync(root)
      ? readdirSync(root)
          .filter((v) => existsSync(join(root, v, 'bin', name)))
          .sort((a, b) => Number(b) - Number(a))
      : []
    if (versions.length === 0) throw error
    return join(root, versions[0], 'bin', name)
  }
}

/** `nobody` when this process is root (initdb and postgres refuse root), else this user. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string): number =>
    Number(execFileSync('id', [flag, 'nobody'], { encoding: 'utf8' }).trim())
  return { uid: id('-u'), gid: id('-g') }
}

/** initdb into `<dir>/data` unless it is there (a restart keeps the data). */
function initdb(dir: string, user: { uid: number; gid: number } | undefined): void {
  const data = join(dir, 'data')
  if (existsSync(data)) return
  if (user !== undefined) chownSync(dir, user.uid, user.gid)
  execFileSync(
    binary('initdb'),
    ['-D', data, '-U', USER, '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
    { stdio: 'ignore', ...user },
  )
}

function postgresArgs(port: number, dir: string, settings: Record<string, string>): string[] {
  const all: Record<string, string> = {
    ...DEFAULT_SETTINGS,
    listen_addresses: HOST,
    port: String(port),
    unix_socket_directories: dir,
    ...settings,
  }
  return ['-D', join(dir, 'data'), ...Object.entries(all).flatMap(([k, v]) => ['-c', `${k}=${v}`])]
}

/** Ready when this server (its data directory, not another on the port) answers a query. */
async function postgresIsReady(port: number, dir: string): Promise<boolean> {
  const client = new Client({
    host: HOST,
    port,
    user: USER,
    database: 'postgres',
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
  })
  client.on('error', () => undefined)
  try {
    await client.connect()
    const { rows } = await client.query<{ data_directory: string }>('SHOW data_directory')
    return rows[0]?.data_directory === join(dir, 'data')
  } finally {
    await client.end().catch(() => undefined)
  }
}

/** A `postgres` on 127.0.0.1 and a free port, in a fresh data directory, superuser `sluice`. */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  const user = serverUser()
  let dir = ''
  const server = await startManaged({
    name: 'postgres',
    binary: binary('postgres'),
    args: (port, d) => postgresArgs(port, d, options.settings ?? {}),
    isReady: (port) => postgresIsReady(port, dir),
    pickPort: freePort,
    stopGraceMs: POSTGRES_STOP_GRACE_MS,
    // SIGTERM waits for every client to disconnect; SIGINT ends their sessions at once.
    stopSignal: 'SIGINT',
    // A backend process per connection: pausing the postmaster alone would hang nothing.
    processTree: true,
    prepare: (d) => {
      dir = d
      initdb(d, user)
    },
    user,
  })
  const { port } = server
  return {
    host: HOST,
    port,
    user: USER,
    url: `postgres://${USER}@${HOST}:${port}/postgres`,
    ...lifecycle(server),
  }
}
