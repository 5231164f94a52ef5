import { randomUUID } from 'node:crypto'
import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import { Server as HocuspocusServer } from '@hocuspocus/server'
import * as Y from 'yjs'
import { openDb } from '../../persistence/db.ts'
import type { Db } from '../../persistence/types.ts'
import { recordWrites, type WriteRecord } from '../../server/live/write-record.ts'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { Agent, connectProvider, Person } from '../support/client.ts'
import { STORAGES, type StorageKind } from '../support/storage.ts'
import { spawnServer } from './harness.ts'
import { lightAgent } from './light-client.ts'
import { line, type Stats, stats, throughput, time } from './stats.ts'

const N = 400
/** Samples of agent write → provider: its p99 is the tenth slowest. */
const LIVE_N = 1000

/** Baseline: one INSERT committed, on the same engine (for PGlite, a second instance in this process). */
async function insertBaseline(db: Db): Promise<Stats> {
  await db.query('create table if not exists bench_baseline (id uuid primary key, v text)')
  return time(N, () =>
    db.query('insert into bench_baseline (id, v) values ($1, $2)', [randomUUID(), 'x']),
  )
}

/** Baseline: a bare Hocuspocus (no auth, no storage) direct-connection write reaching a provider. */
async function bareHocuspocus(): Promise<Stats> {
  const server = new HocuspocusServer({ port: 0, quiet: true, stopOnSignals: false })
  await server.listen()
  const doc = new Y.Doc()
  const socket = new HocuspocusProviderWebsocket({ url: `ws://127.0.0.1:${server.address.port}` })
  const provider = new HocuspocusProvider({
    websocketProvider: socket,
    name: 'bench',
    document: doc,
    token: 't',
  })
  provider.attach()
  await new Promise<void>((r) => provider.on('synced', () => r()))
  const direct = await server.hocuspocus.openDirectConnection('bench')
  const map = doc.getMap('m')
  const s = await time(N, async (i) => {
    const seen = new Promise<void>((r) => {
      const check = () => {
        if (map.get('k') === i) {
          map.unobserve(check)
          r()
        }
      }
      map.observe(check)
    })
    await direct.transact((d) => d.getMap('m').set('k', i))
    await seen
  })
  await direct.disconnect()
  provider.destroy()
  socket.destroy()
  await server.destroy()
  return s
}

/**
 * An agent whose requests rotate over several keys of one organisation, so a benchmark can
 * run faster than one key's 240 requests per minute with the real limiter in force.
 */
async function rotating(owner: Person, keys: number) {
  const agents = await Promise.all(
    Array.from({ length: keys }, async () => new Agent(owner.url, await owner.createKey())),
  )
  let i = 0
  return {
    ok: (action: string, params?: unknown) =>
      (agents[i++ % agents.length] as Agent).ok(action, params),
  }
}

/**
 * The statement storing one write, alone (Postgres: the service's own database): what a
 * created card records, as create_task builds it: a board update of a card's size, its
 * change row, its words and its history entry, made with an agent key (held FOR SHARE),
 * raising an event no webhook subscribes to. The update goes to a document of its own.
 */
async function recordOne(db: Db, owner: Person): Promise<Stats> {
  const res = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
    name: 'record_writes bench',
  })
  const keyId = res.body.apiKey.id as string
  const update = new Uint8Array(600).fill(7)
  const actor = { kind: 'agent' as const, email: 'bench@agents.localhost', name: 'An agent' }
  return time(N, () => {
    const id = randomUUID()
    const at = new Date().toISOString()
    const record: WriteRecord = {
      updates: [{ doc: `${owner.orgId}/bench-record`, update, generation: 0 }],
      keyId,
      changes: [{ kind: 'task', entityId: id }],
      ops: [
        { t: 'text', id, rec: { title: 'A created card', description: '', archived: false } },
        {
          t: 'history',
          id,
          rec: { kind: 'created', actor, at, detail: { title: 'A created card' } },
        },
      ],
      events: {
        rows: [{ id: randomUUID(), type: 'card.created', payload: JSON.stringify({ id }) }],
        createdAt: new Date(),
      },
    }
    return recordWrites(db, { orgId: owner.orgId, allOrNothing: true }, [record])
  })
}

async function storageRun(kind: StorageKind, log: (l: string) => void, bare: Stats) {
  // The service as deployed: its own process, so the load generator does not share its event
  // loop, with the specification's rate limits in force (requests rotate over enough keys).
  const server = await spawnServer(kind)
  const baselineDb = await openDb(
    kind === 'postgres'
      ? { databaseUrl: server.storage, maxConnections: 1 }
      : { dataDir: 'memory://' },
  )
  try {
    log(`\n### ${kind === 'postgres' ? 'real Postgres' : 'PGlite'}`)
    const insert = await insertBaseline(baselineDb)
    log(line('baseline: bare INSERT committed', insert))

    const owner = new Person(server.url)
    await owner.signUp()
    const agent = await rotating(owner, 16)
    const { columns } = await agent.ok('list_columns')
    const [a, b] = [columns[0].id as string, columns[1].id as string]

    if (kind === 'postgres') {
      log(
        line(
          'record_writes: what one created card stores',
          await recordOne(baselineDb, owner),
          insert,
        ),
      )
    }

    const created: string[] = []
    const create = await time(N, async (i) => {
      const { task } = await agent.ok('create_task', { columnId: a, title: `bench ${i}` })
      created.push(task.id)
    })
    log(line('create_task', create, insert))
    const move = await time(N, (i) =>
      agent.ok('move_task', { taskId: created[i % created.length], columnId: i % 2 ? a : b }),
    )
    log(line('move_task', move, insert))
    const getTask = await time(N, (i) =>
      agent.ok('get_task', { taskId: created[i % created.length] }),
    )
    log(line('get_task', getTask, insert))

    // Throughput: 8 concurrent clients (two keys each, one organisation) creating 2,000 cards,
    // through a light keep-alive client so the generator takes less of the shared CPU. Three
    // rounds, each with fresh keys (the limits stay in force); the median round is the
    // figure, as the host's load varies from second to second. Then the same with an
    // Idempotency-Key on every call, as the typed client sends one, in the same run.
    const createThroughput = async (keyed: boolean) => {
      const rounds: number[] = []
      for (let round = 0; round < 3; round++) {
        const clients = await Promise.all(
          Array.from({ length: 8 }, async () => [
            lightAgent(server.url, await owner.createKey(), 1, keyed),
            lightAgent(server.url, await owner.createKey(), 1, keyed),
          ]),
        )
        const total = 2000
        let next = 0
        const t0 = performance.now()
        await Promise.all(
          clients.map(async (pair) => {
            let turn = 0
            while (next < total) {
              next++
              await pair[turn++ % 2]?.ok('create_task', { columnId: b, title: 'throughput' })
            }
          }),
        )
        rounds.push((total / (performance.now() - t0)) * 1000)
        for (const pair of clients) for (const c of pair) c.close()
      }
      return rounds
    }
    const median = (rounds: readonly number[]) =>
      [...rounds].sort((x, y) => x - y)[Math.floor(rounds.length / 2)] ?? Number.NaN
    const unkeyed = await createThroughput(false)
    log(
      throughput(
        'create_task throughput, 8 concurrent clients, one board',
        unkeyed,
        'three rounds of 2,000',
      ),
    )
    const keyed = await createThroughput(true)
    log(
      `${throughput(
        'create_task throughput, 8 clients with Idempotency-Key',
        keyed,
        'three rounds of 2,000',
      )}   ${(median(keyed) / median(unkeyed)).toFixed(2)}× unkeyed`,
    )

    // Agent write → provider: from sending the request to the provider's document holding it.
    const live = await connectProvider(
      server.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    const tasks = boardMaps(live.doc).tasks
    const samples: number[] = []
    for (let i = 0; i < LIVE_N; i++) {
      const title = `live ${i}`
      const t = performance.now()
      const seen = new Promise<void>((resolve) => {
        const check = (e: Y.YMapEvent<Y.Map<unknown>>) => {
          for (const key of e.keysChanged) {
            if (tasks.get(key)?.get('title') === title) {
              tasks.unobserve(check)
              resolve()
            }
          }
        }
        tasks.observe(check)
      })
      await Promise.all([agent.ok('create_task', { columnId: a, title }), seen])
      samples.push(performance.now() - t)
    }
    live.destroy()
    log(line('agent write → visible in a connected provider', stats(samples), bare))

    // get_board on a board of exactly 2,000 cards (a fresh organisation).
    const bigOwner = new Person(server.url)
    await bigOwner.signUp()
    const big = await rotating(bigOwner, 16)
    const bigColumn = (await big.ok('list_columns')).columns[0].id
    let made = 0
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (made < 2000) {
          made++
          await big.ok('create_task', {
            columnId: bigColumn,
            title: `Seeded card ${made} with a realistic title`,
            description: 'Some description text. '.repeat(8),
            priority: 'normal',
          })
        }
      }),
    )
    log(
      line('get_board, 2,000 cards (full form)', await time(60, () => big.ok('get_board')), insert),
    )
    log(
      line(
        'get_board, 2,000 cards (summary form)',
        await time(60, () => big.ok('get_board', { summary: true })),
        insert,
      ),
    )
  } finally {
    await baselineDb.close()
    await server.close()
  }
}

export async function run(log: (line: string) => void): Promise<void> {
  const bare = await bareHocuspocus()
  log(line('baseline: bare Hocuspocus direct write → provider', bare))
  for (const kind of STORAGES) await storageRun(kind, log, bare)
}
