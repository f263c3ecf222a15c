/**
 * Owns the ARGV RedisStore sends: the generic scripts' (lua/driver.ts), which the packed
 * scripts share, and a per-policy flat script's, trimmed to what is not its default.
 */
import type { StoreRefund, StoreRequest } from '@sluice/core'

/** consume, peek, refund (with `extra`: ms ago) or reward (without), penalize. */
export type Op = 'c' | 'p' | 'r' | 'x'

/** How the store's calls are timed: the settings the ARGV carry. */
export interface ArgSettings {
  /** Redis TIME decides: `now` is left out. */
  readonly serverTime: boolean
  /** ms added to every TTL, as the scripts take it. */
  readonly toleranceMs: string
}

/**
 * Whether Redis decides the call on its own clock (TIME): with server time, except a refund at
 * a time Redis itself reported (StoreRefund.storeClock), which is decided at that `now`.
 */
export function decidesAtOwnNow(request: StoreRequest, serverTime: boolean): boolean {
  return serverTime && (request as StoreRefund).storeClock !== true
}

/** Adds ARGV[1..6] of the generic scripts (lua/driver.ts). */
export function pushDriverArgs(
  args: string[],
  request: StoreRequest,
  op: Op,
  extra: string,
  settings: ArgSettings,
): void {
  args.push(
    op,
    decidesAtOwnNow(request, settings.serverTime) ? '' : String(request.now),
    String(request.cost),
    extra,
    settings.toleranceMs,
    request.maxDelayMs! > 0 ? String(request.maxDelayMs) : '0',
  )
}

/**
 * A per-policy flat script's ARGV (see `inputs` in lua/flat/frame.ts): extra, op, now, cost,
 * maxDelayMs, whose defaults are '', 'c', TIME, 1 and 0, sent up to the last one that differs,
 * so a consume with server time and cost 1 sends none.
 */
export function pushOwnArgs(
  args: string[],
  request: StoreRequest,
  op: Op,
  extra: string,
  serverTime: boolean,
): void {
  const cost = request.cost
  const maxDelayMs = request.maxDelayMs! > 0 ? (request.maxDelayMs as number) : 0
  const ownNow = decidesAtOwnNow(request, serverTime)
  const count =
    maxDelayMs > 0 ? 5 : cost !== 1 ? 4 : !ownNow ? 3 : op !== 'c' ? 2 : extra !== '' ? 1 : 0
  if (count > 0) args.push(extra)
  if (count > 1) args.push(op)
  if (count > 2) args.push(ownNow ? '' : String(request.now))
  if (count > 3) args.push(String(cost))
  if (count > 4) args.push(String(maxDelayMs))
}
