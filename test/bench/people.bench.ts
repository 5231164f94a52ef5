import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import { Server as HocuspocusServer } from '@hocuspocus/server'
import postgres from 'postgres'
import * as Y from 'yjs'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { Agent, Person } from '../support/client.ts'
import type { StorageKind } from '../support/storage.ts'
import { type BenchServer, spawnServer } from './harness.ts'
import { line, rate, stats } from './stats.ts'

interface Peer {
  doc: Y.Doc
  provider: HocuspocusProvider
  socket: HocuspocusProviderWebsocket
}

async function connect(wsUrl: string, name: string, token: string): Promise<Peer> {
  const doc = new Y.Doc()
  const socket = new HocuspocusProviderWebsocket({ url: wsUrl })
  const provider = new HocuspocusProvider({ websocketProvider: socket, name, document: doc, token })
  provider.attach()
  await new Promise<void>((resolve) => provider.on('synced', () => resolve()))
  return { doc, provider, socket }
}

const close = (peers: Peer[]) => {
  for (const p of peers) {
    p.provider.destroy()
    p.socket.destroy()
  }
}

async function allSynced(peers: Peer[]): Promise<void> {
  while (peers.some((p) => p.provider.hasUnsyncedChanges))
    await new Promise((r) => setTimeout(r, 2))
}

/** Resolves when every peer's `tasks` map holds a card with this title. */
function seenByAll(peers: Peer[], title: string): Promise<void> {
  let left = peers.length
  return new Promise((resolve) => {
    for (const p of peers) {
      const tasks = boardMaps(p.doc).tasks
      const check = (e: Y.YMapEvent<Y.Map<unknown>>) => {
        for (const key of e.keysChanged) {
          if (tasks.get(key)?.get('title') === title) {
            tasks.unobserve(check)
            if (--left === 0) resolve()
            return
          }
        }
      }
      tasks.observe(check)
    }
  })
}

/** Baselines: the same traffic on a bare Hocuspocus (no auth, no validation, no storage). */
async function bare(log: (l: string) => void) {
  const server = new HocuspocusServer({ port: 0, quiet: true, stopOnSignals: false })
  await server.listen()
  const ws = `ws://127.0.0.1:${server.address.port}`
  const fanout = await Promise.all(Array.from({ length: 100 }, () => connect(ws, 'bench', 't')))
  const direct = await server.hocuspocus.openDirectConnection('bench')
  const samples: number[] = []
  for (let i = 0; i < 100; i++) {
    const title = `bare ${i}`
    const t0 = performance.now()
    const seen = seenByAll(fanout, title)
    await direct.transact((d) => {
      const m = new Y.Map<unknown>()
      m.set('title', title)
      boardMaps(d).tasks.set(crypto.randomUUID(), m)
    })
    await seen
    samples.push(performance.now() - t0)
  }
  const fan = stats(samples)
  log(line('baseline: bare Hocuspocus write → all 100 providers', fan))
  close(fanout.slice(50))
  const editors = fanout.slice(0, 50)
  const ids = [...boardMaps(editors[0]?.doc as Y.Doc).tasks.keys()]
  const t0 = performance.now()
  editors.forEach((p, i) => {
    for (let k = 0; k < 40; k++)
      boardMaps(p.doc)
        .tasks.get(ids[(i + k) % ids.length] as string)
        ?.set('title', `e${i}-${k}`)
  })
  await allSynced(editors)
  const edits = rate(
    'baseline: bare Hocuspocus, edits acknowledged, 50 providers',
    2000,
    performance.now() - t0,
  )
  log(edits)
  close(editors)
  await direct.disconnect()
  await server.destroy()
  return fan
}

async function ours(
  kind: StorageKind,
  log: (l: string) => void,
  baseline: ReturnType<typeof stats>,
) {
  const server: BenchServer = await spawnServer(kind, { RATE_LIMIT_PER_KEY: '1000000' })
  try {
    const owner = new Person(server.url)
    await owner.signUp()
    const agent = new Agent(server.url, await owner.createKey())
    const { columns } = await agent.ok('list_columns')
    const token = await owner.syncToken()
    const ws = `${server.url.replace(/^http/, 'ws')}/sync`
    const name = boardDocName(owner.orgId)
    const peers = await Promise.all(Array.from({ length: 100 }, () => connect(ws, name, token)))
    const samples: number[] = []
    for (let i = 0; i < 100; i++) {
      const title = `agent ${i}`
      const t0 = performance.now()
      await Promise.all([
        seenByAll(peers, title),
        agent.ok('create_task', { columnId: columns[0].id, title }),
      ])
      samples.push(performance.now() - t0)
    }
    log(line('agent create_task → all 100 providers', stats(samples), baseline))
    close(peers.slice(50))

    // People's edits: 50 providers, 40 title edits each on existing cards, all valid.
    const editors = peers.slice(0, 50)
    const ids = [...boardMaps(editors[0]?.doc as Y.Doc).tasks.keys()]
    const sql =
      kind === 'postgres' ? postgres(server.storage, { max: 1, onnotice: () => {} }) : undefined
    const countChanges = async () => {
      if (!sql) return undefined
      const [row] = await sql`select count(*)::int as n from changes where org_id = ${owner.orgId}`
      return row?.n as number
    }
    const before = await countChanges()
    const t0 = performance.now()
    // Each provider edits its own two cards, so every edit is a visible change (concurrent
    // writes to one field would let one win and the others change nothing).
    editors.forEach((p, i) => {
      for (let k = 0; k < 40; k++)
        boardMaps(p.doc)
          .tasks.get(ids[2 * i + (k % 2)] as string)
          ?.set('title', `e${i}-${k}`)
    })
    await allSynced(editors)
    const acknowledged = performance.now() - t0
    log(rate("people's edits validated and acknowledged, 50 providers", 2000, acknowledged))
    if (before !== undefined) {
      // Persisted: every accepted edit has its change row committed.
      const deadline = Date.now() + 60_000
      let n = 0
      while (Date.now() < deadline) {
        n = ((await countChanges()) ?? 0) - before
        if (n >= 2000) break
        await new Promise((r) => setTimeout(r, 5))
      }
      log(
        rate(
          `people's edits validated and persisted (${n} change rows committed)`,
          n,
          performance.now() - t0,
        ),
      )
    }
    close(editors)
    await sql?.end()
  } finally {
    await server.close()
  }
}

export async function run(log: (line: string) => void): Promise<void> {
  log('\n### baselines')
  const baseline = await bare(log)
  for (const kind of ['postgres', 'pglite'] as const) {
    log(`\n### ${kind === 'postgres' ? 'real Postgres' : 'PGlite'}`)
    await ours(kind, log, baseline)
  }
}
