/**
 * Owns the binary-protocol requests the store sends through memjs (multi-get, increment,
 * decrement, compare-and-swap or add, set, delete), each as a promise.
 */
import type { Client, Response, Server } from 'memjs'

/*
 * A minimal binary-protocol layer over memjs's connections. memjs 1.3 has neither a multi-get
 * nor compare-and-swap (its `get` drops the CAS value and its `set` cannot send one), so the
 * store frames its own requests and hands them to memjs's `Server` objects: memjs still owns
 * the sockets, reconnection, SASL and its `timeout`, and picks the server with its (overridable)
 * `getServer`. Nothing here is retried: an increment that timed out may have been applied, so
 * resending it could count a request twice. A failure becomes the store's StoreError instead,
 * and the limiter's `onStoreError` decides.
 */

const MAGIC_REQUEST = 0x80
const HEADER_BYTES = 24

const OP_SET = 0x01
const OP_ADD = 0x02
const OP_DELETE = 0x04
const OP_INCREMENT = 0x05
const OP_DECREMENT = 0x06
const OP_QUIT = 0x07
const OP_NOOP = 0x0a
const OP_GETKQ = 0x0d

const STATUS_OK = 0x00
const STATUS_NOT_FOUND = 0x01
const STATUS_EXISTS = 0x02
const STATUS_NOT_STORED = 0x05

/** Expiration sent with DECR so that a missing counter is not created (binary protocol rule). */
const NO_CREATE = 0xffffffff
/** Relative expirations above 30 days are read by memcached as a Unix time. */
const MAX_RELATIVE_TTL_S = 60 * 60 * 24 * 30

const STATUS_TEXT: Readonly<Record<number, string>> = {
  0x01: 'key not found',
  0x02: 'key exists',
  0x03: 'value too large',
  0x04: 'invalid arguments',
  0x05: 'item not stored',
  0x06: 'incr/decr on a non-numeric value',
  0x81: 'unknown command',
  0x82: 'out of memory',
  0x83: 'not supported',
  0x84: 'internal error',
  0x85: 'busy',
  0x86: 'temporary failure',
}

/** The parts of a memjs `Client` the store uses; any memjs 1.x client has them. */
export type MemjsClient = Pick<Client<never, unknown>, 'server' | 'servers' | 'incrSeq' | 'seq'> & {
  readonly options: { readonly failover?: boolean; readonly failoverTime?: number }
}

/** One item read by `getMulti`: its bytes and the CAS value to write it back with. */
export interface Item {
  readonly value: Buffer
  readonly cas: Buffer
}

/** A write that lost a compare-and-swap race (or found the item gone or already there). */
export const CONFLICT = Symbol('conflict')

/** memjs marks a failed server as asleep through this field (read by `Client#server`). */
type SleepyServer = Server & { wakeupAt?: number }

/**
 * The last Unix time memcached takes as an expiration: the field is 32 bits on the wire, and
 * memcached reads it signed (0xffffffff is -1, an item that expires at once). January 2038.
 */
const MAX_EXPIRATION = 0x7fff_ffff

/**
 * The memcached expiration field for a lifetime of `seconds` (relative up to 30 days, else a
 * Unix time); a lifetime past January 2038 (a block for good, a window of centuries) ends then.
 */
export function expiration(seconds: number): number {
  const whole = Math.max(1, Math.ceil(seconds))
  if (whole <= MAX_RELATIVE_TTL_S) return whole
  return Math.min(Math.ceil(Date.now() / 1000) + whole, MAX_EXPIRATION)
}

function frame(
  opcode: number,
  key: string,
  extras: Buffer | undefined,
  value: Buffer | undefined,
  opaque: number,
  cas?: Buffer,
): Buffer {
  const keyLength = Buffer.byteLength(key)
  const extrasLength = extras?.length ?? 0
  const valueLength = value?.length ?? 0
  const buffer = Buffer.alloc(HEADER_BYTES + extrasLength + keyLength + valueLength)
  buffer.writeUInt8(MAGIC_REQUEST, 0)
  buffer.writeUInt8(opcode, 1)
  buffer.writeUInt16BE(keyLength, 2)
  buffer.writeUInt8(extrasLength, 4)
  buffer.writeUInt32BE(extrasLength + keyLength + valueLength, 8)
  buffer.writeUInt32BE(opaque, 12)
  if (cas !== undefined) cas.copy(buffer, 16)
  if (extras !== undefined) extras.copy(buffer, HEADER_BYTES)
  buffer.write(key, HEADER_BYTES + extrasLength)
  if (value !== undefined) value.copy(buffer, HEADER_BYTES + extrasLength + keyLength)
  return buffer
}

function counterExtras(amount: number, initial: number, expires: number): Buffer {
  const extras = Buffer.alloc(20)
  extras.writeBigUInt64BE(BigInt(amount), 0)
  extras.writeBigUInt64BE(BigInt(initial), 8)
  extras.writeUInt32BE(expires, 16)
  return extras
}

function storeExtras(expires: number): Buffer {
  const extras = Buffer.alloc(8) // flags (0), then the expiration
  extras.writeUInt32BE(expires, 4)
  return extras
}

function statusError(response: Response, what: string): Error {
  const status = response.header.status
  const text = STATUS_TEXT[status] ?? `status 0x${status.toString(16)}`
  const detail = response.val.length > 0 ? `: ${response.val.toString('utf8')}` : ''
  return new Error(`memcached ${what} failed: ${text}${detail}`)
}

function asError(reason: unknown): Error {
  // memjs reports a failed SASL authentication as a plain string.
  return reason instanceof Error ? reason : new Error(String(reason))
}

export class Wire {
  constructor(private readonly client: MemjsClient) {}

  /**
   * Reads `keys` in one request: GETKQ for each (quiet, so misses send nothing) and a NOOP whose
   * reply ends the batch. Misses are absent from the map.
   */
  getMulti(route: string, keys: readonly string[]): Promise<Map<string, Item>> {
    const found = new Map<string, Item>()
    let failure: Error | undefined
    return this.exchange<Map<string, Item>>(
      route,
      (opaque) => {
        const frames = keys.map((key) => frame(OP_GETKQ, key, undefined, undefined, opaque))
        frames.push(frame(OP_NOOP, '', undefined, undefined, opaque))
        return Buffer.concat(frames)
      },
      true,
      (response) => {
        if (response.header.opcode === OP_NOOP) {
          return failure === undefined ? { value: found } : { error: failure }
        }
        if (response.header.status === STATUS_OK) {
          found.set(response.key.toString('utf8'), {
            value: Buffer.from(response.val),
            cas: Buffer.from(response.header.cas),
          })
        } else if (response.header.status !== STATUS_NOT_FOUND) {
          failure ??= statusError(response, 'get')
        }
        return undefined
      },
    )
  }

  /** Adds `amount` to a counter, creating it at `amount` with `ttlSeconds` when missing. */
  increment(route: string, key: string, amount: number, ttlSeconds: number): Promise<number> {
    const extras = counterExtras(amount, amount, expiration(ttlSeconds))
    return this.single(route, (opaque) => frame(OP_INCREMENT, key, extras, undefined, opaque), {
      ok: (response) => Number(response.val.readBigUInt64BE(0)),
      what: 'increment',
    })
  }

  /** Subtracts `amount` from a counter (memcached stops at 0); a missing counter stays missing. */
  decrement(route: string, key: string, amount: number): Promise<number | undefined> {
    const extras = counterExtras(amount, 0, NO_CREATE)
    return this.single(route, (opaque) => frame(OP_DECREMENT, key, extras, undefined, opaque), {
      ok: (response) => Number(response.val.readBigUInt64BE(0)),
      missing: () => undefined,
      what: 'decrement',
    })
  }

  /**
   * Writes `value` only if the item is unchanged since it was read with `cas`, or, with no
   * `cas`, only if the item does not exist (ADD). Resolves CONFLICT when another writer won.
   */
  compareAndSet(
    route: string,
    key: string,
    value: Buffer,
    ttlSeconds: number,
    cas: Buffer | undefined,
  ): Promise<true | typeof CONFLICT> {
    const opcode = cas === undefined ? OP_ADD : OP_SET
    const extras = storeExtras(expiration(ttlSeconds))
    const conflict = (): typeof CONFLICT => CONFLICT
    return this.single<true | typeof CONFLICT>(
      route,
      (opaque) => frame(opcode, key, extras, value, opaque, cas),
      {
        ok: () => true as const,
        // SET with a CAS answers EXISTS when the item changed and NOT_FOUND when it went away;
        // ADD answers EXISTS (or NOT_STORED on some servers) when another creator came first.
        missing: conflict,
        exists: conflict,
        notStored: conflict,
        what: cas === undefined ? 'add' : 'compare-and-set',
      },
    )
  }

  /** Writes `value` whatever the item holds (SET without CAS). */
  set(route: string, key: string, value: Buffer, ttlSeconds: number): Promise<void> {
    const extras = storeExtras(expiration(ttlSeconds))
    return this.single(route, (opaque) => frame(OP_SET, key, extras, value, opaque), {
      ok: () => undefined,
      what: 'set',
    })
  }

  delete(route: string, key: string): Promise<void> {
    return this.single(route, (opaque) => frame(OP_DELETE, key, undefined, undefined, opaque), {
      ok: () => undefined,
      missing: () => undefined,
      what: 'delete',
    })
  }

  /** Sends QUIT to every connected server (the server closes the connection on reading it). */
  quit(): void {
    for (const server of this.client.servers) {
      if (!server.connected) {
        server.close()
        continue
      }
      this.client.incrSeq()
      const opaque = this.client.seq >>> 0
      const close = (): void => server.close()
      server.onResponse(opaque, close)
      server.onError(opaque, close)
      server.write(frame(OP_QUIT, '', undefined, undefined, opaque))
    }
  }

  private single<T>(
    route: string,
    build: (opaque: number) => Buffer,
    answers: {
      ok: (response: Response) => T
      missing?: () => T
      exists?: () => T
      notStored?: () => T
      what: string
    },
  ): Promise<T> {
    return this.exchange<T>(route, build, false, (response) => {
      const status = response.header.status
      const answer =
        status === STATUS_OK
          ? answers.ok
          : status === STATUS_NOT_FOUND
            ? answers.missing
            : status === STATUS_EXISTS
              ? answers.exists
              : status === STATUS_NOT_STORED
                ? answers.notStored
                : undefined
      return answer === undefined
        ? { error: statusError(response, answers.what) }
        : { value: answer(response) }
    })
  }

  /**
   * Writes one request (one or more frames sharing an opaque) to the server memjs picks for
   * `route` and settles when `handle` returns an answer. A quiet exchange receives every reply
   * with its opaque until one with an empty body (memjs keeps quiet callbacks until then).
   */
  private exchange<T>(
    route: string,
    build: (opaque: number) => Buffer,
    quiet: boolean,
    handle: (response: Response) => { value: T } | { error: Error } | undefined,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const server = this.client.server(route) as SleepyServer | null | undefined
      if (server === null || server === undefined) {
        reject(new Error('no memcached server available (all are marked failed)'))
        return
      }
      this.client.incrSeq()
      // memjs wraps its sequence into a signed int past 2^31; opaques on the wire are unsigned,
      // and replies are matched by the unsigned value read back.
      const opaque = this.client.seq >>> 0
      let settled = false
      const onResponse = Object.assign(
        (response: Response): void => {
          if (settled) return
          const answer = handle(response)
          if (answer === undefined) return
          settled = true
          if ('error' in answer) reject(answer.error)
          else resolve(answer.value)
        },
        { quiet },
      )
      server.onResponse(opaque, onResponse)
      server.onError(opaque, (reason: unknown) => {
        if (settled) return
        settled = true
        // Honour memjs's `failover`: later requests go to the next server for `failoverTime`.
        if (this.client.options.failover === true && this.client.servers.length > 1) {
          server.wakeupAt = Date.now() + (this.client.options.failoverTime ?? 60) * 1000
        }
        reject(asError(reason))
      })
      server.write(build(opaque))
    })
  }
}
