// Values of peer-library option names (max, duration), checked under the name the user wrote,
// before a compat entry maps them onto Sluice's own options.
import { checkFiniteNumber, checkPositiveInteger } from '@sluice/core/web'

/** A limit given as `max`: a positive integer, or a function the adapter checks per request. */
export function checkAliasLimit(value: unknown, alias: string): void {
  if (value !== undefined && typeof value !== 'function') checkPositiveInteger(value, alias)
}

/** A window given in ms as the peer takes it (`windowMs`, `duration`): a number, not a string. */
export function checkAliasMs(value: unknown, alias: string): void {
  if (value !== undefined) checkFiniteNumber(value, alias, 'a positive number of ms')
}
