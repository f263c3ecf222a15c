import { MemoryStore } from '@sluice/core'
import { describeStoreConformance } from '@sluice/testkit'

describeStoreConformance('MemoryStore', async () => {
  const store = new MemoryStore()
  return { store, close: () => store.close() }
})
