import { randomUUID } from 'node:crypto'
import { Server as HocuspocusServer } from '@hocuspocus/server'
import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import * as Y from 'yjs'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { Agent, connectProvider, ownerWithAgent } from '../support/client.ts'
import { startServer } from '../support/server.ts'
import { STORAGES, type StorageKind } from '../support/storage.ts'
import { line, rate, type Stats, stats, time } from './stats.ts'

const N = 400

/** Baseline: one INSERT committed, on the same driver and database. */
async function insertBaseline(server: Awaited<ReturnType<typeof startServer>>): Promise<Stats> {
  const db = server.storage.db
  await db.query('create table bench_baseline (id uuid primary key, v text)')
  return time(N, () => db.query('insert into bench_baseline (id, v) values ($1, $2)', [randomUUID(), 'x']))
}

/** Baseline: a bare Hocuspocus (no auth, no storage) direct-connection write reaching a provider. */
async function bareHocuspocus(): Promise<Stats> {
  const server = new HocuspocusServer({ port: 0, quiet: true, stopOnSignals: false })
  await server.listen()
  const url = `ws://127.0.0.1:${server.address.port}`
  const doc = new Y.Doc()
  const socket = new HocuspocusProviderWebsocket({ url })
  const provider = new HocuspocusProvider({ websocketProvider: socket, name: 'bench', document: doc, token: 't' })
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

/** Seeds `count` cards in one server write (fast), so the read benchmarks run on a big board. */
async function seedBoard(server: Awaited<ReturnType<typeof startServer>>, orgId: string, columnId: string, count: number) {
  await server.app.live.write(boardDocName(orgId), { type: 'server', orgId }, async (w) => {
    w.mutate((doc) => {
      const tasks = boardMaps(doc).tasks
      for (let i = 0; i < count; i++) {
        const m = new Y.Map<unknown>()
        m.set('columnId', columnId)
        m.set('projectId', null)
        m.set('title', `Seeded card ${i} with a realistic title length`)
        m.set('description', new Y.Text('Some description text that a card would carry. '.repeat(4)))
        m.set('type', i % 3 === 0 ? 'bug' : 'feature')
        m.set('priority', ['urgent', 'high', 'normal', 'low', null][i % 5])
        m.set('tags', ['backend', `t${i % 7}`])
        m.set('assigneeIds', [])
        m.set('position', (i + 1) * 1024)
        m.set('createdAt', w.now)
        m.set('updatedAt', w.now)
        m.set('archivedAt', null)
        m.set('createdByEmail', 'seed@example.test')
        tasks.set(randomUUID(), m)
      }
    })
  })
}

async function storageRun(kind: StorageKind, log: (l: string) => void) {
  const server = await startServer(kind, { rateLimitPerKey: 1_000_000 } as never)
  try {
    log(`\n### ${kind === 'postgres' ? 'real Postgres' : 'PGlite'}`)
    const insert = await insertBaseline(server)
    log(line('baseline: bare INSERT committed', insert))

    const { owner, agent } = await ownerWithAgent(server.url)
    const { columns } = await agent.ok('list_columns')
    const [a, b] = [columns[0].id as string, columns[1].id as string]

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
    const getTask = await time(N, (i) => agent.ok('get_task', { taskId: created[i % created.length] }))
    log(line('get_task', getTask, insert))

    // Throughput: 8 concurrent clients, each with its own key, creating cards for a fixed count.
    const clients = await Promise.all(Array.from({ length: 8 }, async () => new Agent(server.url, await owner.createKey())))
    const total = 2000
    let next = 0
    const t0 = performance.now()
    await Promise.all(
      clients.map(async (c) => {
        while (next < total) {
          next++
          await c.ok('create_task', { columnId: b, title: 'throughput' })
        }
      }),
    )
    log(rate('create_task throughput, 8 concurrent clients', total, performance.now() - t0))

    // Agent write → provider: from sending the request to the provider's document holding it.
    const live = await connectProvider(server.url, boardDocName(owner.orgId), await owner.syncToken())
    const tasks = boardMaps(live.doc).tasks
    const samples: number[] = []
    for (let i = 0; i < N; i++) {
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
    log(line('agent write → visible in a connected provider', stats(samples), await bareHocuspocus()))
    log(line('baseline: bare Hocuspocus direct write → provider', await bareHocuspocus()))

    // get_board on a board of 2,000 cards.
    const big = await ownerWithAgent(server.url)
    const bigColumns = (await big.agent.ok('list_columns')).columns
    await seedBoard(server, big.orgId, bigColumns[0].id, 2000)
    const board = await time(60, () => big.agent.ok('get_board'))
    log(line('get_board, 2,000 cards (full form)', board, insert))
    const summary = await time(60, () => big.agent.ok('get_board', { summary: true }))
    log(line('get_board, 2,000 cards (summary form)', summary, insert))
  } finally {
    await server.close()
  }
}

export async function run(log: (line: string) => void): Promise<void> {
  for (const kind of STORAGES) await storageRun(kind, log)
}
