/** Codes that identify each failure; stable across versions so callers can branch on them. */
export type SluiceErrorCode =
  | 'ERR_SLUICE_CONFIG'
  | 'ERR_SLUICE_STORE'
  | 'ERR_SLUICE_STORE_TIMEOUT'
  | 'ERR_SLUICE_STORE_UNAVAILABLE'
  | 'ERR_SLUICE_STORE_BUSY'
  | 'ERR_SLUICE_ARGUMENT'
  | 'ERR_SLUICE_UNSUPPORTED'
  | 'ERR_SLUICE_ABORTED'

/** Base class of every error Sluice throws. A rejected request is never an error: it is a `Decision`. */
export class SluiceError extends Error {
  readonly code: SluiceErrorCode

  constructor(code: SluiceErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'SluiceError'
    this.code = code
  }
}

/** A bad option, thrown when a limiter, store or adapter is created; names the option and the value. */
export class ConfigError extends SluiceError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_SLUICE_CONFIG', message, options)
    this.name = 'ConfigError'
  }
}

/** How a store call failed: it failed, took longer than `timeoutMs`, was not sent (breaker open), or too many were out. */
export type StoreErrorCode =
  | 'ERR_SLUICE_STORE'
  | 'ERR_SLUICE_STORE_TIMEOUT'
  | 'ERR_SLUICE_STORE_UNAVAILABLE'
  | 'ERR_SLUICE_STORE_BUSY'

/** A store call failed or took longer than `timeoutMs`; `cause` holds the underlying error. */
export class StoreError extends SluiceError {
  constructor(message: string, options?: { cause?: unknown; code?: StoreErrorCode }) {
    super(options?.code ?? 'ERR_SLUICE_STORE', message, options)
    this.name = 'StoreError'
  }
}

/** Renders a value for an error message: strings quoted, everything else as JSON where possible. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value)
  if (value === undefined) return 'undefined'
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** Throws a ConfigError in the one format every option check uses. */
export function invalidOption(option: string, value: unknown, expected: string): never {
  throw new ConfigError(`\`${option}\` must be ${expected}; got ${describeValue(value)}`)
}

/**
 * Builds an error without capturing a stack. For errors raised from a timer, or wrapping a
 * cause that has its own stack: when a hung store's calls fail by the thousand, a stack each
 * is a tenth of the CPU, and every answer waits for it.
 */
export function withoutStack<E extends Error>(make: () => E): E {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return make()
  } finally {
    Error.stackTraceLimit = limit
  }
}
