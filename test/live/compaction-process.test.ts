import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { getPriority, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { Compactor, OWN_PROCESS_FROM_BYTES } from '../../server/live/compaction-thread.ts'
import { type Encoded, replay } from '../../server/live/doc-store.ts'
import { boardDocName } from '../../shared/doc-names.ts'
import { startProcess } from '../support/service-process.ts'

/**
 * A large document's snapshot is replayed in a process of its own, which ends with the job,
 * so the replay's memory goes back to the system instead of staying with the server
 * (compaction-thread.ts). The process is a real one: these tests watch it start and end,
 * and kill it.
 */

/** Updates of a board over OWN_PROCESS_FROM_BYTES: projects written, half deleted since. */
function largeBoard(): { updates: Encoded[]; expected: unknown } {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (u: Uint8Array) => updates.push(u))
  const projects = doc.getMap('projects')
  const count = Math.ceil((1.2 * OWN_PROCESS_FROM_BYTES) / 2_000)
  for (let batch = 0; batch < 4; batch++) {
    doc.transact(() => {
      for (let i = batch; i < count; i += 4) {
        projects.set(`p${i}`, new Y.Map([['name', `${i} `.padEnd(2_000, 'x')]]))
      }
    })
  }
  doc.transact(() => {
    for (let i = 0; i < count; i += 2) projects.delete(`p${i}`)
  })
  return { updates: updates.map((data) => ({ data, v2: false })), expected: projects.toJSON() }
}

/** This process's children running a compaction job. */
function jobProcesses(): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-f', 'compaction-job'], {
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean)
      .map(Number)
  } catch {
    return []
  }
}

describe('large snapshots in a process of their own', () => {
  let compactor: Compactor | undefined

  afterEach(async () => {
    await compactor?.close()
    compactor = undefined
  })

  test('a snapshot of a document of OWN_PROCESS_FROM_BYTES or more is replayed in a process that ends with the job, and holds the same state', async () => {
    compactor = new Compactor({ lowPriority: false })
    const { updates, expected } = largeBoard()
    expect(updates.reduce((n, u) => n + u.data.length, 0)).toBeGreaterThanOrEqual(
      OWN_PROCESS_FROM_BYTES,
    )
    const seen = new Set<number>()
    const watch = setInterval(() => {
      for (const pid of jobProcesses()) seen.add(pid)
    }, 10)
    const made = await compactor.snapshot(updates, boardDocName(randomUUID())).finally(() => {
      clearInterval(watch)
    })
    expect(seen.size).toBe(1)
    expect(jobProcesses()).toEqual([])
    const copy = new Y.Doc()
    // Stored as snapshots are: in update format 2.
    replay(copy, [{ data: made.update, v2: true }])
    expect(copy.getMap('projects').toJSON()).toEqual(expected)
    // Deleted content is dropped, as on the thread.
    expect(made.update.length).toBeLessThan(updates.reduce((n, u) => n + u.data.length, 0) / 1.5)
    expect(made.rebasedBytes).toBeGreaterThan(0)
  })

  test('large snapshots asked for together run one process at a time', async () => {
    compactor = new Compactor({ lowPriority: false })
    const { updates, expected } = largeBoard()
    let most = 0
    const watch = setInterval(() => {
      most = Math.max(most, jobProcesses().length)
    }, 5)
    const made = await Promise.all(
      [1, 2, 3].map(() => compactor?.snapshot(updates, boardDocName(randomUUID()))),
    ).finally(() => clearInterval(watch))
    expect(most).toBe(1)
    for (const m of made) {
      const copy = new Y.Doc()
      replay(copy, [{ data: m?.update as Uint8Array, v2: true }])
      expect(copy.getMap('projects').toJSON()).toEqual(expected)
    }
  })

  test('a compaction process killed mid-replay fails only its job: the next snapshot succeeds and the server process lives on', async () => {
    compactor = new Compactor({ lowPriority: false })
    const { updates, expected } = largeBoard()
    const name = boardDocName(randomUUID())
    const job = compactor.snapshot(updates, name)
    let killed: number | undefined
    const deadline = Date.now() + 20_000
    while (killed === undefined && Date.now() < deadline) {
      killed = jobProcesses()[0]
      if (killed === undefined) await new Promise((r) => setTimeout(r, 5))
    }
    expect(killed).toBeDefined()
    process.kill(killed as number, 'SIGKILL')
    await expect(job).rejects.toThrow(/compaction process exited with SIGKILL/)
    const again = await compactor.snapshot(updates, name)
    const copy = new Y.Doc()
    replay(copy, [{ data: again.update, v2: true }])
    expect(copy.getMap('projects').toJSON()).toEqual(expected)
  })

  test('closing the compactor ends a replay under way in its own process', async () => {
    compactor = new Compactor({ lowPriority: false })
    const { updates } = largeBoard()
    const job = compactor.snapshot(updates, boardDocName(randomUUID()))
    const deadline = Date.now() + 20_000
    while (jobProcesses().length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5))
    await compactor.close()
    compactor = undefined
    await expect(job).rejects.toThrow(/compaction process exited/)
    expect(jobProcesses()).toEqual([])
  })

  test("the service's request thread keeps its priority: only compaction runs at the lowest", async () => {
    // The request thread imports the compaction module for its constants; that module
    // lowers the priority of the thread or process that runs compactions, and only theirs.
    const dir = await mkdtemp(join(tmpdir(), 'cb-priority-'))
    const service = await startProcess({ DATA_DIR: dir })
    try {
      expect(getPriority(service.child.pid)).toBe(getPriority(process.pid))
    } finally {
      await service.stop()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
