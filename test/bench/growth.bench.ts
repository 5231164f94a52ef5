import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import { createApp } from '../../server/app.ts'
import { robotEmail } from '../../server/auth/api-keys.ts'
import { loadConfig } from '../../server/config.ts'
import { boardMaps, type StoredTask, taskMap } from '../../shared/board-doc.ts'
import { boardDocName } from '../../shared/doc-names.ts'
import { EMPTY_STATS } from '../../shared/records.ts'
import { Agent, connectProvider } from '../support/client.ts'
import { startProcess } from '../support/service-process.ts'
import type { StorageKind } from '../support/storage.ts'
import { benchStorage, boardSize, rssMb } from './harness.ts'
import { type OrgShape, type SeededOrg, seedOrg } from './history-seed.ts'
import { lightAgent } from './light-client.ts'
import { line, type Stats, time } from './stats.ts'

/**
 * Growth with history (issue: a board that stays fast after a year of agents writing to
 * it). Organisations with the same cards on the board and more and more history behind
 * them (cards created, commented, claimed and released, then archived), and one with
 * 10,000 cards on the board, each measured in a server process of its own that loaded
 * only that organisation: what the board document weighs, what a cold load and a
 * provider's first sync take, the server's memory, and the everyday reads and writes.
 * The organisation without history is the baseline every ratio is taken against.
 */
const ON_BOARD = 2_000
/** Agents write long descriptions (plans, specs, logs): every card carries one this long. */
const DESCRIPTION = Number(process.env.BENCH_DESCRIPTION ?? 2_000)
const SHAPES: Record<string, OrgShape> = {
  'no history': {
    onBoard: ON_BOARD,
    commentsOnBoard: 2,
    archived: 0,
    commentsPerArchived: 0,
    claimedArchived: 0,
  },
  '1× history (1,000 archived)': {
    onBoard: ON_BOARD,
    commentsOnBoard: 2,
    archived: 1_000,
    commentsPerArchived: 3,
    claimedArchived: 400,
  },
  '10× history (10,000 archived)': {
    onBoard: ON_BOARD,
    commentsOnBoard: 2,
    archived: 10_000,
    commentsPerArchived: 3,
    claimedArchived: 4_000,
  },
  '50× history (50,000 archived, 150,000 comments, 20,000 claims)': {
    onBoard: ON_BOARD,
    commentsOnBoard: 2,
    archived: 50_000,
    commentsPerArchived: 3,
    claimedArchived: 20_000,
  },
  '10,000 cards on the board': {
    onBoard: 10_000,
    commentsOnBoard: 1,
    archived: 0,
    commentsPerArchived: 0,
    claimedArchived: 0,
  },
}
for (const shape of Object.values(SHAPES)) shape.descriptionChars = DESCRIPTION
/** PGlite seeds slowly (one connection): the baseline, the largest history and the wide board. */
const PGLITE_SHAPES = [
  'no history',
  '50× history (50,000 archived, 150,000 comments, 20,000 claims)',
  '10,000 cards on the board',
]
/** Warms a process before "cold" measurements: another organisation, small. */
const WARM_UP: OrgShape = {
  onBoard: 200,
  commentsOnBoard: 1,
  archived: 0,
  commentsPerArchived: 0,
  claimedArchived: 0,
}
/** Cold measurements are repeated in fresh processes and the median kept. */
const COLD_RUNS = 3

interface Measured {
  name: string
  /** The board document as a provider receives it (update format 1), and as stored (2). */
  docBytes: number
  docStored: number
  docRows: number
  coldBoard: number
  /** get_board's summary form, cold: the cheap read an agent starts with. */
  coldSummary: number
  coldSync: number
  /** The first get_board of a process just started. */
  restartBoard: number
  warmSync: number
  rss: number
  getBoard: Stats
  /** get_board's full answer received, not parsed: the service's part and the transfer. */
  getBoardReceived: Stats
  summary: Stats
  summaryReceived: Stats
  getTask: Stats
  getArchived: Stats | undefined
  createTask: Stats
  addComment: Stats
}

/**
 * What the fields Contract 3 fixes weigh alone: 1,000 cards an agent created in one
 * transaction (a 28-character title, no project, type, priority, tags or blockers; the
 * robot's e-mail of a deployment at corkboard.example), written by the service's own
 * `taskMap`, with `stats` as a card without comments has it and as one with two; in the
 * update format snapshots are stored in (2, which writes the ids of the items' parents and
 * neighbours column by column) and in the one providers receive (1).
 */
function contractCardBytes(): Record<'bare' | 'commented', { stored: number; sent: number }> {
  const perCard = (stats: StoredTask['stats'], encode = Y.encodeStateAsUpdate) => {
    const doc = new Y.Doc()
    const before = encode(doc).length
    const columnId = randomUUID()
    const email = robotEmail(randomUUID(), 'https://corkboard.example')
    doc.transact(() => {
      for (let i = 0; i < 1_000; i++) {
        const at = new Date().toISOString()
        boardMaps(doc).tasks.set(
          randomUUID(),
          taskMap({
            columnId,
            projectId: null,
            title: `Fix the login form, step ${String(i).padStart(3, '0')}`,
            type: null,
            priority: null,
            tags: [],
            blockedBy: [],
            assigneeIds: [],
            position: i + 1,
            createdAt: at,
            updatedAt: at,
            archivedAt: null,
            createdByEmail: email,
            stats,
          }),
        )
      }
    })
    return (encode(doc).length - before) / 1_000
  }
  const commented: StoredTask['stats'] = {
    commentCount: 2,
    imageCount: 0,
    lastCommentBy: 'agent',
    lastCommentAt: new Date().toISOString(),
    lastCommentAuthor: 'An agent',
  }
  const both = (stats: StoredTask['stats']) => ({
    stored: perCard(stats, Y.encodeStateAsUpdateV2),
    sent: perCard(stats),
  })
  return { bare: both(EMPTY_STATS), commented: both(commented) }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0

/**
 * A process that has been serving for a while (a small organisation's board loaded,
 * synced and read, so the code is compiled as in production), in which `org`'s board is
 * not yet in memory: what "cold" means for a running service.
 */
async function warmProcess(env: Record<string, string>, warmOn: SeededOrg) {
  const proc = await startProcess(env)
  const agent = lightAgent(proc.url, warmOn.key, 1)
  for (let i = 0; i < 30; i++) await agent.ok('get_board')
  for (let i = 0; i < 30; i++) await agent.ok('get_task', { taskId: warmOn.onBoard[i] })
  const live = await connectProvider(proc.url, boardDocName(warmOn.orgId), warmOn.key)
  live.destroy()
  agent.close()
  return proc
}

async function measure(
  env: Record<string, string>,
  name: string,
  org: SeededOrg,
  warmOn: SeededOrg,
  size: { bytes: number; stored: number; rows: number },
): Promise<Measured> {
  const board = boardDocName(org.orgId)
  const colds: number[] = []
  const coldSummaries: number[] = []
  const coldSyncs: number[] = []
  const restarts: number[] = []
  for (let i = 0; i < COLD_RUNS; i++) {
    const proc = await warmProcess(env, warmOn)
    let t0 = performance.now()
    await new Agent(proc.url, org.key).ok('get_board')
    colds.push(performance.now() - t0)
    await proc.stop()
    const brief = await warmProcess(env, warmOn)
    t0 = performance.now()
    await new Agent(brief.url, org.key).ok('get_board', { summary: true })
    coldSummaries.push(performance.now() - t0)
    await brief.stop()
    const again = await warmProcess(env, warmOn)
    t0 = performance.now()
    const live = await connectProvider(again.url, board, org.key)
    coldSyncs.push(performance.now() - t0)
    live.destroy()
    await again.stop()
    const fresh = await startProcess(env)
    t0 = performance.now()
    await new Agent(fresh.url, org.key).ok('get_board')
    restarts.push(performance.now() - t0)
    await fresh.stop()
  }
  // Everyday use of this organisation alone, then the process's memory.
  const proc = await startProcess(env)
  try {
    const agent = lightAgent(proc.url, org.key, 1)
    await agent.ok('get_board')
    const t0 = performance.now()
    const live = await connectProvider(proc.url, board, org.key)
    const warmSync = performance.now() - t0
    live.destroy()
    const getBoard = await time(100, () => agent.ok('get_board'))
    const getBoardReceived = await time(300, () => agent.received('get_board'))
    const summary = await time(100, () => agent.ok('get_board', { summary: true }))
    const summaryReceived = await time(300, () => agent.received('get_board', { summary: true }))
    const pick = (ids: string[], i: number) => ids[(i * 7919) % ids.length] as string
    const getTask = await time(300, (i) => agent.ok('get_task', { taskId: pick(org.onBoard, i) }))
    const getArchived =
      org.archived.length > 0
        ? await time(300, (i) => agent.ok('get_task', { taskId: pick(org.archived, i) }))
        : undefined
    const { columns } = (await agent.ok('list_columns')) as { columns: { id: string }[] }
    const columnId = columns[0]?.id
    const createTask = await time(200, (i) =>
      agent.ok('create_task', { columnId, title: `bench ${i}` }),
    )
    const addComment = await time(200, (i) =>
      agent.ok('add_comment', { taskId: pick(org.onBoard, i), body: `bench comment ${i}` }),
    )
    agent.close()
    const rss = await rssMb(proc.child.pid)
    return {
      name,
      docBytes: size.bytes,
      docStored: size.stored,
      docRows: size.rows,
      coldBoard: median(colds),
      coldSummary: median(coldSummaries),
      coldSync: median(coldSyncs),
      restartBoard: median(restarts),
      warmSync,
      rss,
      getBoard,
      getBoardReceived,
      summary,
      summaryReceived,
      getTask,
      getArchived,
      createTask,
      addComment,
    }
  } finally {
    await proc.stop()
  }
}

const mb = (bytes: number) => `${(bytes / 1_000_000).toFixed(2)} MB`
const ms = (x: number) => `${x.toFixed(0)} ms`

async function storageRun(kind: StorageKind, log: (l: string) => void): Promise<void> {
  const storage = await benchStorage(kind)
  const only = process.env.BENCH_SHAPES?.split(',').map(Number)
  const names = (kind === 'pglite' ? PGLITE_SHAPES : Object.keys(SHAPES)).filter(
    (_, i) => !only || only.includes(i),
  )
  try {
    const config = {
      ...loadConfig({ ...process.env, ...storage.env }),
      port: 0,
      host: '127.0.0.1',
      logLevel: 'error' as const,
      scryptN: 1024,
      docIdleMs: 200,
    }
    const app = await createApp(config)
    const url = await app.listen()
    const warmOn = await seedOrg(app, url, WARM_UP)
    const seeded = new Map<
      string,
      { org: SeededOrg; size: { bytes: number; stored: number; rows: number } }
    >()
    for (const name of names) {
      const shape = SHAPES[name] as OrgShape
      const t0 = performance.now()
      const org = await seedOrg(app, url, shape)
      await app.live.flushPeople()
      seeded.set(name, { org, size: { bytes: 0, stored: 0, rows: 0 } })
      log(`  seeded ${name} in ${((performance.now() - t0) / 1000).toFixed(0)} s`)
    }
    // Compaction settles as the service leaves it (on close); sizes are read after that.
    await app.close()
    const reader = await createApp(config)
    for (const entry of seeded.values()) entry.size = await boardSize(reader, entry.org.orgId)
    await reader.close()

    const results: Measured[] = []
    const env = { ...storage.env, RATE_LIMIT_PER_KEY: '1000000' }
    for (const [name, { org, size }] of seeded) {
      results.push(await measure(env, name, org, warmOn, size))
      if ((SHAPES[name] as OrgShape).archived === 0 || process.env.BENCH_REBASE === '0') continue
      // The same organisation once its board started over as a new generation.
      const rebaser = await createApp(config)
      const done = await rebaser.live.rebase(boardDocName(org.orgId))
      await rebaser.close()
      const again = await createApp(config)
      const after = await boardSize(again, org.orgId)
      await again.close()
      log(
        `  re-based ${name} in ${ms(done.heldMs)} held (${mb(done.bytesBefore)} → ${mb(done.bytesAfter)} stored)`,
      )
      results.push(await measure(env, `${name}, re-based`, org, warmOn, after))
    }
    report(kind, results, log)
  } finally {
    await storage.drop()
  }
}

function report(kind: StorageKind, results: Measured[], log: (l: string) => void): void {
  const base = results[0] as Measured
  log(
    `\n${kind}: ${ON_BOARD.toLocaleString('en')} cards on the board unless said; baseline: no history`,
  )
  log(
    `${'organisation'.padEnd(66)} ${'board doc'.padStart(10)} ${'stored'.padStart(8)} ${'rows'.padStart(5)} ${'cold get_board'.padStart(15)} ${'cold summary'.padStart(13)} ${'cold sync'.padStart(10)} ${'warm sync'.padStart(10)} ${'after restart'.padStart(14)} ${'RSS'.padStart(8)}`,
  )
  for (const r of results) {
    log(
      `${r.name.padEnd(66)} ${mb(r.docBytes).padStart(10)} ${mb(r.docStored).padStart(8)} ${String(r.docRows).padStart(5)} ${ms(r.coldBoard).padStart(15)} ${ms(r.coldSummary).padStart(13)} ${ms(r.coldSync).padStart(10)} ${ms(r.warmSync).padStart(10)} ${ms(r.restartBoard).padStart(14)} ${`${r.rss.toFixed(0)} MB`.padStart(8)}`,
    )
  }
  for (const r of results) {
    const shape = SHAPES[r.name] as OrgShape | undefined
    if (!shape || shape.archived > 0) continue
    log(
      `${r.name}: ${(r.docStored / shape.onBoard).toFixed(0)} B of board document stored per card on the board (${mb(r.docStored)}), ${(r.docBytes / shape.onBoard).toFixed(0)} B as a provider receives it (${mb(r.docBytes)}); descriptions of ${DESCRIPTION.toLocaleString('en')} characters in their card documents`,
    )
  }
  const fixed = contractCardBytes()
  log(
    `the fields Contract 3 fixes, alone: ${fixed.bare.stored.toFixed(0)} B stored a card an agent created (${fixed.commented.stored.toFixed(0)} B once it has two comments), before any edit's tombstone; ${fixed.bare.sent.toFixed(0)} and ${fixed.commented.sent.toFixed(0)} B as a provider receives them`,
  )
  for (const r of results.slice(1)) {
    const shape = SHAPES[r.name.replace(/, re-based$/, '')] as OrgShape
    if (shape.archived === 0) continue
    const comments = shape.archived * shape.commentsPerArchived
    const perCard = (r.docBytes - base.docBytes) / shape.archived
    log(
      `${r.name}: history ${((100 * (r.docBytes - base.docBytes)) / r.docBytes).toFixed(1)}% of the board document, cold get_board ×${(r.coldBoard / base.coldBoard).toFixed(2)} (summary ×${(r.coldSummary / base.coldSummary).toFixed(2)}), first sync ×${(r.coldSync / base.coldSync).toFixed(2)}; +${perCard.toFixed(0)} B of board document per archived card (${comments.toLocaleString('en')} comments, ${shape.claimedArchived.toLocaleString('en')} claims behind them); RSS ×${(r.rss / base.rss).toFixed(2)} of no history`,
    )
  }
  for (const r of results) {
    log(`\n${r.name}`)
    log(line('get_board (full)', r.getBoard, base.getBoard))
    log(line('  the same, answer received unparsed', r.getBoardReceived, base.getBoardReceived))
    log(line('get_board (summary)', r.summary, base.summary))
    log(line('  the same, answer received unparsed', r.summaryReceived, base.summaryReceived))
    log(line('get_task, a card on the board', r.getTask, base.getTask))
    if (r.getArchived) log(line('get_task, an archived card', r.getArchived, base.getTask))
    log(line('create_task', r.createTask, base.createTask))
    log(line('add_comment', r.addComment, base.addComment))
  }
}

export async function run(log: (l: string) => void): Promise<void> {
  const stores = (process.env.BENCH_STORAGES ?? 'postgres,pglite').split(',') as StorageKind[]
  for (const kind of stores) await storageRun(kind, log)
}
