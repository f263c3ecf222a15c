/**
 * Owns Redis Cluster: nodes, slots, and moving a slot as a reshard does.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { freeClusterPort, pollUntil, requireBinary } from './children'
import { infoField, redisCommand } from './probes'
import { startRedisWith } from './redis'
import {
  CLUSTER_BUS_OFFSET,
  CLUSTER_TIMEOUT_MS,
  HostPort,
  MoveSlotOptions,
  RedisClusterHandle,
  RedisServer,
  StartRedisClusterOptions,
} from './types'

// ---------------------------------------------------------------------------------------------
// Redis Cluster

export function clusterNodeArgs(dir: string): string[] {
  return [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    join(dir, 'nodes.conf'),
    '--cluster-node-timeout',
    '2000',
  ]
}

/** Cluster masters (no replicas) covering all 16384 slots, ready once every node says ok. */
export async function startRedisCluster(
  opts: StartRedisClusterOptions = {},
): Promise<RedisClusterHandle> {
  const masters = opts.masters ?? 3
  if (!Number.isInteger(masters) || masters < 3) {
    throw new Error(`a Redis cluster needs at least 3 masters, got ${masters}`)
  }
  const cli = requireBinary('redis-cli')
  const servers = await startClusterNodes(masters)
  const nodes = servers.map(({ host, port }) => ({ host, port }))
  const stop = async (): Promise<void> => {
    await Promise.all(servers.map((server) => server.stop()))
  }
  try {
    const output = await createCluster(cli, nodes)
    await waitForClusterOk(nodes, output)
  } catch (error) {
    await stop()
    throw error
  }
  return { nodes, servers, stop }
}

export async function startClusterNodes(count: number): Promise<RedisServer[]> {
  const taken = new Set<number>()
  const pickPort = async (): Promise<number> => {
    const port = await freeClusterPort(taken)
    taken.add(port).add(port + CLUSTER_BUS_OFFSET)
    return port
  }
  const started = await Promise.allSettled(
    Array.from({ length: count }, () => startRedisWith(clusterNodeArgs, pickPort)),
  )
  const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
  const failure = started.find((result) => result.status === 'rejected')
  if (failure) {
    await Promise.all(servers.map((server) => server.stop()))
    throw failure.reason
  }
  return servers
}

/** `redis-cli --cluster create`; resolves with its output (for error messages later). */
export function createCluster(cli: string, nodes: HostPort[]): Promise<string> {
  const args = [
    '--cluster',
    'create',
    ...nodes.map((node) => `${node.host}:${node.port}`),
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ]
  return new Promise((resolve, reject) => {
    execFile(cli, args, { timeout: CLUSTER_TIMEOUT_MS }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`.trim()
      if (error) reject(new Error(`redis-cli --cluster create failed: ${error.message}\n${output}`))
      else resolve(output)
    })
  })
}

export async function waitForClusterOk(nodes: HostPort[], createOutput: string): Promise<void> {
  const everyNodeOk = async (): Promise<boolean> => {
    try {
      const infos = await Promise.all(nodes.map((node) => redisCommand(node, ['CLUSTER', 'INFO'])))
      return infos.every(
        (info) =>
          infoField(info, 'cluster_state') === 'ok' &&
          infoField(info, 'cluster_known_nodes') === String(nodes.length),
      )
    } catch {
      return false
    }
  }
  if (await pollUntil(everyNodeOk, CLUSTER_TIMEOUT_MS)) return
  throw new Error(
    `the Redis cluster did not reach cluster_state:ok within ${CLUSTER_TIMEOUT_MS} ms.\n` +
      `redis-cli output:\n${createOutput}`,
  )
}

/** The hash slot of a key (CRC16/XMODEM of the key or its non-empty `{hash tag}`, mod 16384). */
export function keySlot(key: string | Buffer): number {
  const bytes = typeof key === 'string' ? Buffer.from(key) : key
  const open = bytes.indexOf('{')
  const close = open === -1 ? -1 : bytes.indexOf('}', open + 1)
  const hashed = close > open + 1 ? bytes.subarray(open + 1, close) : bytes
  return crc16(hashed) % 16384
}

export function crc16(bytes: Buffer): number {
  let crc = 0
  for (const byte of bytes) {
    crc ^= byte << 8
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
    }
  }
  return crc
}

/** Index in `handle.nodes` of the node that owns `slot`, as node 0 sees it. */
export async function slotOwner(handle: RedisClusterHandle, slot: number): Promise<number> {
  const ranges = await redisCommand(handle.nodes[0], ['CLUSTER', 'SLOTS'])
  for (const range of Array.isArray(ranges) ? ranges : []) {
    if (!Array.isArray(range)) continue
    const [start, end, master] = range
    if (typeof start !== 'number' || typeof end !== 'number' || !Array.isArray(master)) continue
    if (slot < start || slot > end) continue
    const index = handle.nodes.findIndex((node) => node.port === master[1])
    if (index !== -1) return index
  }
  throw new Error(`no node of the cluster owns slot ${slot}`)
}

/**
 * Migrates `slot` and all its keys from node `fromIndex` to node `toIndex` the way a reshard
 * does (SETSLOT IMPORTING/MIGRATING, MIGRATE ... KEYS, SETSLOT NODE), so clients holding the
 * old slot map get MOVED afterwards (and ASK inside `afterKeysMigrated`). Resolves with the
 * number of keys moved.
 */
export async function moveSlot(
  handle: RedisClusterHandle,
  slot: number,
  fromIndex: number,
  toIndex: number,
  opts: MoveSlotOptions = {},
): Promise<number> {
  const source = clusterNode(handle, fromIndex)
  const target = clusterNode(handle, toIndex)
  if (fromIndex === toIndex) throw new Error('moveSlot: source and target are the same node')
  if (!Number.isInteger(slot) || slot < 0 || slot > 16383) {
    throw new Error(`moveSlot: invalid slot ${slot}`)
  }
  const sourceId = String(await redisCommand(source, ['CLUSTER', 'MYID']))
  const targetId = String(await redisCommand(target, ['CLUSTER', 'MYID']))
  await redisCommand(target, ['CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId])
  await redisCommand(source, ['CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId])
  try {
    const moved = await migrateKeys(source, target, slot)
    await opts.afterKeysMigrated?.()
    return moved
  } finally {
    // Even if the callback threw: never leave the cluster half-migrated.
    await assignSlot(handle, slot, targetId, [toIndex, fromIndex])
  }
}

export function clusterNode(handle: RedisClusterHandle, index: number): HostPort {
  const node = handle.nodes[index]
  if (!node) throw new Error(`moveSlot: no node at index ${index}`)
  return node
}

export async function migrateKeys(
  source: HostPort,
  target: HostPort,
  slot: number,
): Promise<number> {
  let moved = 0
  for (;;) {
    const keys = await redisCommand(source, ['CLUSTER', 'GETKEYSINSLOT', String(slot), '100'])
    if (!Array.isArray(keys) || keys.length === 0) return moved
    const names = keys.map(String)
    const migrate = ['MIGRATE', target.host, String(target.port), '', '0', '5000', 'KEYS']
    await redisCommand(source, [...migrate, ...names])
    moved += names.length
  }
}

/** SETSLOT NODE on the target first, then the source, then the others (as redis-cli does). */
export async function assignSlot(
  handle: RedisClusterHandle,
  slot: number,
  nodeId: string,
  firstIndexes: number[],
): Promise<void> {
  const others = handle.nodes.map((_, index) => index).filter((i) => !firstIndexes.includes(i))
  for (const index of [...firstIndexes, ...others]) {
    await redisCommand(handle.nodes[index], ['CLUSTER', 'SETSLOT', String(slot), 'NODE', nodeId])
  }
}
