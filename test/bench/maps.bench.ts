import { randomBytes } from 'node:crypto'
import { png, toBase64 } from '../images/fixtures.ts'
import { ownerWithAgent } from '../support/client.ts'
import { startServer } from '../support/server.ts'
import { STORAGES, type StorageKind } from '../support/storage.ts'
import { line, time } from './stats.ts'

/**
 * Mind maps: create_nodes with 100 nodes and get_map on a 1,000-node map, against
 * baselines measured in the same run on the same server (one node written; an empty map
 * read), so the ratios show what batching and map size cost, whatever the machine's noise.
 */
const N = 100
/** create_nodes calls per map before moving to a fresh one, so maps stay around 1,000 nodes. */
const CALLS_PER_MAP = 10

const nodesInput = (count: number, row: number) =>
  Array.from({ length: count }, (_, i) => ({
    text: `Thought ${row}.${i}: a realistic length of node text for a mind map`,
    x: (i % 10) * 220,
    y: (row * 10 + Math.floor(i / 10)) * 90,
    color: i % 3 === 0 ? '#3b82f6' : undefined,
  }))

async function storageRun(kind: StorageKind, log: (line: string) => void) {
  // The rate budgets are measured elsewhere; here they would only throttle the loop.
  const server = await startServer(kind, {
    rateLimitPerKey: 1_000_000_000,
    rateLimitImagesPerOrg: 1_000_000_000,
  })
  try {
    log(`\n### ${kind === 'postgres' ? 'real Postgres' : 'PGlite'}`)
    const { agent } = await ownerWithAgent(server.url)
    const newMap = async (title: string) =>
      (await agent.ok('create_map', { title })).map.id as string

    const single = await newMap('single nodes')
    const one = await time(N, (i) => agent.ok('create_node', { mapId: single, text: `node ${i}` }))
    log(line('baseline: create_node (one node)', one))

    const warmup = 20
    const maps: string[] = []
    for (let i = 0; i < Math.ceil((N + warmup) / CALLS_PER_MAP); i++)
      maps.push(await newMap(`batch ${i}`))
    const batch = await time(
      N,
      (i) =>
        agent.ok('create_nodes', {
          mapId: maps[Math.floor(i / CALLS_PER_MAP) % maps.length],
          nodes: nodesInput(100, i % CALLS_PER_MAP),
        }),
      warmup,
    )
    log(line('create_nodes, 100 nodes per call', batch, one))

    const empty = await newMap('empty')
    const readEmpty = await time(N, () => agent.ok('get_map', { mapId: empty }))
    log(line('baseline: get_map, empty map', readEmpty))

    const big = await newMap('a thousand nodes')
    const ids: string[] = []
    for (let row = 0; row < 10; row++) {
      const { nodes } = await agent.ok('create_nodes', { mapId: big, nodes: nodesInput(100, row) })
      ids.push(...nodes.map((n: { id: string }) => n.id))
    }
    for (let k = 0; k < 5; k++) {
      const edges = Array.from({ length: 200 }, (_, i) => ({
        sourceId: ids[(k * 200 + i) % ids.length],
        targetId: ids[(k * 200 + i + 1) % ids.length],
      }))
      await agent.ok('create_edges', { mapId: big, edges })
    }
    const readBig = await time(N, () => agent.ok('get_map', { mapId: big }))
    log(line('get_map, 1,000 nodes and 1,000 edges', readBig, readEmpty))

    // A megabyte of incompressible data in a private ancillary chunk: the validator walks
    // and CRC-checks every byte of it, and the store writes all of it.
    const image = toBase64(
      png({ width: 256, height: 256, extra: [['noIs', [...randomBytes(1 << 20)]]] }),
    )
    const picture = await time(50, (i) =>
      agent.ok('set_node_image', { nodeId: ids[i % ids.length], imageBase64: image }),
    )
    log(line(`set_node_image, ${Math.round((image.length * 3) / 4 / 1024)} KB PNG`, picture, one))
  } finally {
    await server.close()
  }
}

export async function run(log: (line: string) => void): Promise<void> {
  for (const kind of STORAGES) await storageRun(kind, log)
}
