/**
 * Owns the proxy checks as express-rate-limit reports them: a ValidationError with its code
 * (ERR_ERL_UNEXPECTED_X_FORWARDED_FOR, ERR_ERL_PERMISSIVE_TRUST_PROXY) given to `logger.error`,
 * unless `validate` turns that check off. Core's proxy warnings decide when, once per kind.
 */
import type { ProxyWarningKind } from '@sluice/http'
import type { EnabledValidations, Logger } from './types'

/** express-rate-limit's `validate` name and error code of each kind of proxy warning. */
const CHECKS: Record<ProxyWarningKind, readonly [name: string, code: string]> = {
  all: ['trustProxy', 'ERR_ERL_PERMISSIVE_TRUST_PROXY'],
  untrusted: ['xForwardedForHeader', 'ERR_ERL_UNEXPECTED_X_FORWARDED_FOR'],
  mistrusted: ['xForwardedForHeader', 'ERR_ERL_UNEXPECTED_X_FORWARDED_FOR'],
}

/** True when `validate` leaves the check `name` on (express-rate-limit's reading of it). */
export function validationEnabled(validate: boolean | EnabledValidations, name: string): boolean {
  if (typeof validate === 'boolean') return validate
  return validate[name] ?? validate.default ?? true
}

/** express-rate-limit's error shape: `name`, `code`, `help`. */
export class ValidationError extends Error {
  readonly help: string

  constructor(
    readonly code: string,
    message: string,
  ) {
    const help = `https://express-rate-limit.github.io/${code}/`
    super(`${message} See ${help} for more information.`)
    this.name = 'ValidationError'
    this.help = help
  }
}

/** The compat entry's `report` of core's proxy warnings. */
export function proxyReporter(
  validate: boolean | EnabledValidations,
  logger: Logger,
): (kind: ProxyWarningKind, message: string) => void {
  return function report(kind, message) {
    const [name, code] = CHECKS[kind]
    if (validationEnabled(validate, name)) logger.error(new ValidationError(code, message))
  }
}
