import { createApp } from '../../server/app.ts'
import { loadConfig } from '../../server/config.ts'
import type { Rebased } from '../../server/live/rebase.ts'
import { boardDocName } from '../../shared/doc-names.ts'
import type { StorageKind } from '../support/storage.ts'
import { benchStorage, boardSize } from './harness.ts'
import { type OrgShape, seedOrg } from './history-seed.ts'
import { lightAgent } from './light-client.ts'
import { line, type Stats, stats, time } from './stats.ts'

/**
 * Re-basing a board (docs/design.md, "Re-basing a document"): how long it takes, how long
 * the organisation's writes wait for it (the lane is held only while what changed during
 * the build is carried and the rows are swapped), and what it leaves of the stored form.
 * A board of 2,000 cards with 2,000 archived behind them (created, commented, claimed,
 * released and archived through the write path, so the document carries the tombstones
 * real use leaves); agent writes run against it throughout. Baseline: the same writes
 * with no re-base running.
 */
const SHAPE: OrgShape = {
  onBoard: 2_000,
  commentsOnBoard: 0,
  archived: 2_000,
  commentsPerArchived: 1,
  claimedArchived: 500,
}
const RUNS = Number(process.env.RUNS ?? 7)

async function storageRun(kind: StorageKind, log: (l: string) => void): Promise<void> {
  const storage = await benchStorage(kind)
  const config = {
    ...loadConfig({ ...process.env, ...storage.env }),
    port: 0,
    host: '127.0.0.1',
    logLevel: 'error' as const,
    scryptN: 1024,
    rateLimitPerKey: 1_000_000,
  }
  const app = await createApp(config)
  try {
    const url = await app.listen()
    const t0 = performance.now()
    const org = await seedOrg(app, url, SHAPE)
    await app.live.flushPeople()
    log(`\n${kind}: seeded in ${((performance.now() - t0) / 1000).toFixed(0)} s`)
    const board = boardDocName(org.orgId)
    const agent = lightAgent(url, org.key, 2)
    const pick = (i: number) => org.onBoard[(i * 7919) % org.onBoard.length] as string
    const write = (i: number) => agent.ok('update_task', { taskId: pick(i), title: `Renamed ${i}` })
    const baseline = await time(200, write)

    const before = await boardSize(app, org.orgId)
    const runs: Rebased[] = []
    const during: number[] = []
    let worst = 0
    for (let r = 0; r < RUNS; r++) {
      // Writes one after another for as long as the re-base runs.
      let running = true
      let i = r * 10_000
      let longest = 0
      const writer = (async () => {
        while (running) {
          const w0 = performance.now()
          await write(i++)
          const took = performance.now() - w0
          during.push(took)
          longest = Math.max(longest, took)
        }
      })()
      const started = performance.now()
      const done = await app.live.rebase(board)
      const wall = performance.now() - started
      running = false
      await writer
      worst = Math.max(worst, longest)
      runs.push({ ...done, heldMs: done.heldMs, bytesAfter: done.bytesAfter })
      log(
        `  re-base ${r + 1}: ${wall.toFixed(0)} ms, writes held ${done.heldMs.toFixed(1)} ms (the longest write ${longest.toFixed(0)} ms), ${done.carried} edits carried, ${(done.bytesBefore / 1e6).toFixed(2)} → ${(done.bytesAfter / 1e6).toFixed(2)} MB stored`,
      )
      if (r === 0) {
        const after = await boardSize(app, org.orgId)
        log(
          `  board document: ${(before.bytes / 1e6).toFixed(2)} MB in ${before.rows} rows → ${(after.bytes / 1e6).toFixed(2)} MB in ${after.rows} rows (×${(after.bytes / before.bytes).toFixed(2)})`,
        )
      }
    }
    agent.close()
    const held: Stats = stats(runs.map((r) => r.heldMs))
    log(line('writes held by a re-base (first has the history)', held, undefined))
    log(`${'longest a write waited during re-bases'.padEnd(58)} ${worst.toFixed(0)} ms`)
    log(line('update_task while re-bases run', stats(during), baseline))
    log(line('update_task, no re-base (baseline)', baseline))
  } finally {
    await app.close()
    await storage.drop()
  }
}

export async function run(log: (l: string) => void): Promise<void> {
  log(
    `A board of ${SHAPE.onBoard.toLocaleString('en')} cards with ${SHAPE.archived.toLocaleString('en')} archived behind them, re-based ${RUNS} times (the first with its history) while an agent writes`,
  )
  const kinds = (process.env.BENCH_STORAGE?.split(',') ?? ['postgres', 'pglite']) as StorageKind[]
  for (const kind of kinds) await storageRun(kind, log)
}
