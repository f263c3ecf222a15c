/**
 * The store conformance suite: one set of cases every Store runs (MemoryStore, RedisStore,
 * MemcachedStore...). A store's decisions must equal those of core's pure transitions
 * (`algorithms[policy.algorithm]` on a plain array) for the same inputs, step by step, with a
 * fixed clock. Stores that cannot do everything declare it with capability flags; the cases
 * they cannot run are not registered (rather than skipped). The cases are in ./conformance,
 * one file per concern.
 */
import { registerAllOrNothingCases } from './conformance/all-or-nothing'
import { registerDesignWindowCases } from './conformance/basics'
import { registerBlockCases } from './conformance/blocks'
import { openConformance, type StoreCapabilities, type StoreUnderTest } from './conformance/context'
import { registerContractCases } from './conformance/contract'
import { registerDesignMeterCases } from './conformance/design-meters'
import { registerPenaltyCases } from './conformance/penalties'
import { registerReservationCases } from './conformance/reservations'
import { registerStateKeyCases } from './conformance/state-keys'
import { registerTraceCases } from './conformance/traces'
import { registerWideCases } from './conformance/wide'

export type { StoreCapabilities, StoreUnderTest } from './conformance/context'
export { blankOutcome, limitArbitrary, plain, ReferenceModel } from './conformance/model'

/** Runs `describe` with the conformance cases for one store. */
export function describeStoreConformance(
  name: string,
  factory: () => Promise<StoreUnderTest>,
  capabilities: StoreCapabilities = {},
): void {
  describe(`store conformance: ${name}`, () => {
    const ctx = openConformance(factory, capabilities)
    registerDesignWindowCases(ctx)
    registerDesignMeterCases(ctx)
    registerContractCases(ctx)
    registerAllOrNothingCases(ctx)
    registerBlockCases(ctx)
    registerPenaltyCases(ctx)
    registerStateKeyCases(ctx)
    registerReservationCases(ctx)
    registerTraceCases(ctx)
    registerWideCases(ctx)
  })
}
