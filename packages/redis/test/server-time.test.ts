import { ALGORITHMS, type AlgorithmName, type Policy } from '@sluice/core'
import { resolvePolicy } from '@sluice/core/adapter'
import { RedisStore } from '@sluice/redis'
import {
  limitArbitrary,
  plain,
  ReferenceModel,
  startRedis,
  startRedisCluster,
  type RedisClusterHandle,
  type RedisServer,
} from '@sluice/testkit'
import fc from 'fast-check'
import { Cluster, Redis } from 'ioredis'

/*
 * time: 'server' against core's transitions. The scripts read Redis TIME, which no test can
 * set, so each call is bracketed by TIME read on a second connection before and after it: the
 * script decided at some ms in between, and its outcomes must be the model's at one of those
 * ms (the model then goes on from that one). Where the store reports the ms it decided at
 * (StoreResult.at), that ms must be in the bracket, and the outcomes the model's at it. Single
 * policies (flat and per-policy scripts, batched and not) and several (the generic scripts).
 */

let server: RedisServer
let admin: Redis
let client: Redis
let keys = 0

beforeAll(async () => {
  server = await startRedis()
  admin = new Redis({ port: server.port, host: server.host })
  client = new Redis({ port: server.port, host: server.host, maxRetriesPerRequest: 1 })
})

afterAll(async () => {
  admin.disconnect()
  client.disconnect()
  await server.stop()
})

async function serverMs(): Promise<number> {
  const [seconds, micros] = await admin.time()
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
}

type Step = { op: 'consume' | 'peek'; cost: number; pause: number }

const stepArbitrary: fc.Arbitrary<Step> = fc.record({
  op: fc.constantFrom('consume', 'consume', 'consume', 'peek') as fc.Arbitrary<Step['op']>,
  cost: fc.oneof({ weight: 4, arbitrary: fc.constant(1) }, fc.integer({ min: 0, max: 4 })),
  // Mostly none: bursts, and now and then a pause for the server's clock to move on.
  pause: fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 30 })),
})

/**
 * Replays `steps` on the store. Each step is checked against every model still possible (one
 * per ms a script may have run at, and what it left), keeping those whose outcome at some ms of
 * the step's bracket is the store's: when two ms give the same outcome but leave different
 * states, both go on until a later step tells them apart.
 */
async function replay(store: RedisStore, policies: Policy[], steps: readonly Step[]) {
  const key = `server-time:${process.pid}:${keys++}`
  let models = [new ReferenceModel(policies)]
  for (const [index, step] of steps.entries()) {
    if (step.pause > 0) await new Promise((resolve) => setTimeout(resolve, step.pause))
    const before = await serverMs()
    const request = { key, policies, cost: step.cost, now: 0 }
    const { outcomes, at: decidedAt } =
      step.op === 'consume' ? await store.consume(request) : await store.peek(request)
    const after = await serverMs()
    // Where the store says when Redis decided (StoreResult.at), that ms alone is checked, and it
    // must lie in the bracket: the models then stay one per state, however long a loaded
    // machine makes the bracket.
    if (decidedAt !== undefined && (decidedAt < before || decidedAt > after)) {
      throw new Error(`step ${index}: the store says ${decidedAt}, outside ${before}..${after}`)
    }
    const first = decidedAt ?? before
    const last = decidedAt ?? after
    const got = JSON.stringify(plain(outcomes))
    const next = new Map<string, ReferenceModel>()
    const seen = new Set<string>()
    for (const model of models) {
      for (let at = first; at <= last; at++) {
        const candidate = model.clone()
        const outcome =
          step.op === 'consume' ? candidate.consume(at, step.cost) : candidate.peek(at, step.cost)
        const text = JSON.stringify(outcome)
        seen.add(text)
        if (text === got) next.set(candidate.snapshot(), candidate)
      }
    }
    if (next.size === 0) {
      throw new Error(
        `step ${index} (${step.op}, cost ${step.cost}, server ms ${first}..${last}): got ` +
          `${got}; the models at those ms: ${[...seen].join(' ')}`,
      )
    }
    models = [...next.values()]
  }
}

/** The cases for one store: every algorithm alone, and several limits of mixed algorithms. */
function traceCases(store: () => RedisStore): void {
  for (const algorithm of ALGORITHMS) {
    test(`${algorithm}: randomized traces`, async () => {
      await fc.assert(
        fc.asyncProperty(
          limitArbitrary(algorithm),
          fc.array(stepArbitrary, { minLength: 1, maxLength: 25 }),
          async (limit, steps) => replay(store(), [resolvePolicy(limit)], steps),
        ),
        { numRuns: 15 },
      )
    })
  }

  test('several limits of mixed algorithms: randomized traces', async () => {
    const algorithm = fc.constantFrom(...(ALGORITHMS as readonly AlgorithmName[]))
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          algorithm.chain((a) => limitArbitrary(a)),
          { minLength: 2, maxLength: 3 },
        ),
        fc.array(stepArbitrary, { minLength: 1, maxLength: 25 }),
        async (limits, steps) =>
          replay(
            store(),
            limits.map((l, i) => resolvePolicy({ ...l, name: `l${i}` })),
            steps,
          ),
      ),
      { numRuns: 15 },
    )
  })
}

describe.each([
  ['per-policy scripts, batched', {}],
  ['per-policy scripts, unbatched', { batchSize: 1 }],
  ['shared scripts', { policyScripts: 0 }],
])("RedisStore with time: 'server' (%s) decides as core's transitions", (_name, options) => {
  let store: RedisStore
  beforeAll(() => {
    // No block cache: it answers from this process, not from the scripts under test.
    store = new RedisStore({
      client,
      time: 'server',
      blockCache: false,
      prefix: `st${keys++}`,
      ...options,
    })
  })
  traceCases(() => store)
})

describe("RedisStore with time: 'server' on a 3-node Cluster decides as core's transitions", () => {
  // The nodes run on this host, so the TIME of any of them brackets a script on another.
  let cluster: RedisClusterHandle
  let clusterClient: Cluster
  let store: RedisStore
  beforeAll(async () => {
    cluster = await startRedisCluster()
    clusterClient = new Cluster(cluster.nodes, { redisOptions: { maxRetriesPerRequest: 1 } })
    store = new RedisStore({ client: clusterClient, time: 'server', blockCache: false })
  })
  afterAll(async () => {
    clusterClient?.disconnect()
    await cluster?.stop()
  })
  traceCases(() => store)
})
