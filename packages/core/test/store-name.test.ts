import { execFile } from 'node:child_process'
import { resolve } from 'node:path'
import { promisify } from 'node:util'

/**
 * Runs `script` on the built package, as an application does: its CommonJS build renamed the
 * local tier's class `_class3` and MemoryStore `_class5`, which is what outage lines said.
 */
async function onDist(script: string): Promise<unknown> {
  const dist = resolve(__dirname, '../dist')
  const { stdout } = await promisify(execFile)(process.execPath, [
    '-e',
    `const core = require(${JSON.stringify(`${dist}/index.js`)})
     const adapter = require(${JSON.stringify(`${dist}/adapter.js`)})
     const report = (value) => process.stdout.write(JSON.stringify(value))
     ${script}`,
  ])
  return JSON.parse(stdout)
}

test('the outage line of a local tier names it localTier(<its store>)', async () => {
  const lines = await onDist(`
    class FlakyStore {
      consume() { return Promise.reject(new Error('connection reset')) }
      peek() { return Promise.reject(new Error('connection reset')) }
      refund() { return Promise.resolve() }
      reset() { return Promise.resolve() }
    }
    const lines = []
    const tier = core.localTier(new FlakyStore())
    const limiter = core.createLimiter({
      limit: 100, window: '1m', store: tier, onStoreError: 'allow',
      logger: { warn: (line) => lines.push(line) },
    })
    limiter.consume('k').then(async () => { await tier.close(); report(lines) })
  `)
  expect(lines).toEqual([
    "[sluice] localTier(FlakyStore) is failing (store call failed); answering with onStoreError 'allow' until it recovers",
  ])
})

test('stores keep their names in the built package: MemoryStore, localTier(MemoryStore)', async () => {
  expect(
    await onDist(`
      const store = new core.MemoryStore()
      report([adapter.storeName(store),
        adapter.storeName(core.localTier(store))])
    `),
  ).toEqual(['MemoryStore', 'localTier(MemoryStore)'])
})
