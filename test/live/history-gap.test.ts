import { afterEach, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { appendUpdate, missingItems, replay } from '../../server/live/doc-store.ts'
import { boardDocName } from '../../shared/doc-names.ts'
import { Agent, Person } from '../support/client.ts'
import { type ServiceProcess, startProcess } from '../support/service-process.ts'
import { freshDb, type TestDb } from '../support/storage.ts'

/**
 * A stored history with a gap: rows that refer to an item no row holds. Yjs keeps what
 * depends on the missing item aside (its pending structs) and merged every later update
 * into it, one at a time, so loading a long history behind such a row blocked a process's
 * thread for minutes: it neither answered nor stopped (found by the 100,000-call mixed
 * race over two processes). A load now applies everything else, at once, and says what is
 * missing.
 */

/**
 * Updates of a document with a gap: a writer's `writes` updates (each an entry of 100
 * characters) with its 10th never stored, so that all its later ones wait for it, and
 * between them, every fifth, an update of another client that depends on nothing missing.
 */
function historyWithGap(writes: number) {
  const writer = new Y.Doc()
  const other = new Y.Doc()
  const updates: Uint8Array[] = []
  let lost: number | undefined
  writer.on('update', (u: Uint8Array) => {
    if (updates.length === 9 && lost === undefined)
      lost = Y.getState(writer.store, writer.clientID) - 1
    else updates.push(u)
  })
  other.on('update', (u: Uint8Array) => updates.push(u))
  for (let i = 0; i < writes; i++) {
    writer.getMap('m').set(`w${i}`, `${i}`.padEnd(100, '.'))
    if (i % 5 === 4) other.getMap('other').set(`k${i}`, i)
  }
  return { updates, writer: writer.clientID, lost: lost as number, others: Math.floor(writes / 5) }
}

describe('a stored history with a gap', () => {
  test('everything that does not depend on the missing item is applied, and the missing item is named', () => {
    const { updates, writer, lost, others } = historyWithGap(5_000)
    const doc = new Y.Doc()
    replay(doc, updates)
    expect(doc.getMap('other').size).toBe(others)
    // The writer's entries before the gap are there; those after it wait for it.
    expect(doc.getMap('m').has('w0')).toBe(true)
    expect(doc.getMap('m').has('w4999')).toBe(false)
    expect(missingItems(doc)).toEqual([[writer, lost]])
    // What waits for the missing item is kept, not dropped: a full state still carries it.
    const copy = new Y.Doc()
    Y.applyUpdate(copy, Y.encodeStateAsUpdate(doc))
    expect(missingItems(copy)).toEqual([[writer, lost]])
  })

  test('a history without a gap loads as before, in any order of its rows', () => {
    const source = new Y.Doc()
    const updates: Uint8Array[] = []
    source.on('update', (u: Uint8Array) => updates.push(u))
    for (let i = 0; i < 500; i++) source.getMap('m').set(`k${i % 50}`, i)
    const inOrder = new Y.Doc()
    replay(inOrder, updates)
    const reversed = new Y.Doc()
    replay(reversed, [...updates].reverse())
    expect(missingItems(inOrder)).toEqual([])
    expect(missingItems(reversed)).toEqual([])
    expect(reversed.getMap('m').toJSON()).toEqual(source.getMap('m').toJSON())
    expect(inOrder.getMap('m').toJSON()).toEqual(source.getMap('m').toJSON())
  })
})

describe('a board whose stored history has a gap (postgres)', () => {
  let storage: TestDb | undefined
  let service: ServiceProcess | undefined
  afterEach(async () => {
    await service?.stop()
    await storage?.drop()
  })

  test('the service loads it, answers, and logs which items are missing', async () => {
    storage = await freshDb('postgres')
    const env = { DATABASE_URL: storage.url as string, LOG_LEVEL: 'error' }
    service = await startProcess(env)
    const owner = new Person(service.url)
    await owner.signUp()
    const key = await owner.createKey()
    const { columns } = await new Agent(service.url, key).ok('list_columns')
    const { task } = await new Agent(service.url, key).ok('create_task', {
      columnId: columns[0].id,
      title: 'Before the gap',
    })
    await service.stop()
    // Rows appended behind the board's: a writer's updates with one never stored.
    const { updates, writer, lost } = historyWithGap(3_000)
    for (const update of updates) {
      await appendUpdate(storage.db, boardDocName(owner.orgId), update)
    }
    service = await startProcess(env)
    const read = await new Agent(service.url, key).ok('get_task', { taskId: task.id })
    expect(read.task.title).toBe('Before the gap')
    const board = await new Agent(service.url, key).ok('get_board', { summary: true })
    expect(board.tasks.map((t: { id: string }) => t.id)).toEqual([task.id])
    expect(service.output()).toContain(
      `${boardDocName(owner.orgId)}: its stored rows refer to items none of them holds (${writer}:${lost})`,
    )
  })
})
