/**
 * Owns what an engine is: the one interface every way of deciding on Redis sits behind (the
 * table in engines/index.ts; which engine a plan takes: route.ts).
 */
import type { StoreRequest, StoreResult } from '@sluice/core'
import type { KeyCalls } from '../key-calls'
import type { PackedLayout } from '../packed-layout'
import type { Plan } from '../plan'
import type { Route } from '../route'
import type { Op } from '../script-args'

/** One way of deciding: runs an operation of a plan on its route's layout. */
export interface Engine {
  /**
   * `extra`: a consume's or penalty's sliding-log request id, a timed refund's ms ago, else
   * ''. Resolves with the outcomes of a consume or peek, one per policy ([] otherwise).
   */
  run(plan: Plan, route: Route, request: StoreRequest, op: Op, extra: string): Promise<StoreResult>
}

/** What engines run on: the calls of each layout. */
export interface EngineHost {
  /** Keys of their own, and wide keys (`:v`). */
  readonly keys: KeyCalls
  /** A packed store's hashes; undefined when the store is not packed. */
  readonly packed: PackedLayout | undefined
}
