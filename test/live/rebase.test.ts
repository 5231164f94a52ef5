import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { LEVEL, loadInto } from '../../server/live/doc-store.ts'
import { dropAbandonedStaging } from '../../server/live/rebase.ts'
import { boardMaps } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { boardDocName, cardDocName } from '../../shared/doc-names.ts'
import { CLOSE } from '../../shared/live-protocol.ts'
import { carry, type DocJson, editsToCarry, generationOf } from '../../shared/rebase.ts'
import {
  type Agent,
  connectProvider,
  eventually,
  eventuallyAsync,
  type LiveClient,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/** A provider on a socket of its own, for a document this test already holds a copy of. */
function attach(server: TestServer, name: string, token: string, doc: Y.Doc) {
  const socket = new HocuspocusProviderWebsocket({
    url: `${server.url.replace(/^http/, 'ws')}/sync`,
  })
  const closed: string[] = []
  const provider = new HocuspocusProvider({
    websocketProvider: socket,
    name,
    document: doc,
    token,
    onClose: ({ event }) => {
      closed.push(event.reason)
    },
  })
  provider.attach()
  return {
    doc,
    provider,
    closed,
    destroy() {
      provider.destroy()
      socket.destroy()
    },
  }
}

/** What an ended generation's route answers. */
interface Ended {
  generation: number
  stateVector: string
  base: DocJson | null
}

describe.each(STORAGES)('re-basing a live document (%s)', (kind) => {
  let server: TestServer
  let owner: Person
  let agent: Agent
  let columnId: string

  beforeAll(async () => {
    // Compaction asks for a re-base here: its thread keeps normal priority, so the rest of
    // the suite does not starve it.
    server = await startServer(
      kind,
      { rateLimitPerKey: 100_000 },
      { compactionAtNormalPriority: true },
    )
    ;({ owner, agent } = await ownerWithAgent(server.url))
    columnId = (await agent.ok('list_columns')).columns[0].id
  })
  afterAll(() => server.close())

  const board = () => boardDocName(owner.orgId)
  const storedBytes = async (name: string) =>
    (
      await server.storage.db.query<{ n: number }>(
        'select coalesce(sum(length(data)), 0)::int as n from doc_updates where doc_name = $1',
        [name],
      )
    )[0]?.n ?? 0
  /** Snapshots stored ahead of a swap and not renamed (a re-base leaves none). */
  const stagedRows = async () =>
    (
      await server.storage.db.query<{ n: number }>(
        "select count(*)::int as n from doc_updates where doc_name like '%#rebase:%'",
      )
    )[0]?.n ?? 0
  const endedGeneration = async (name: string, generation: number) => {
    const res = await owner.request<Ended>(
      'GET',
      `/api/app/orgs/${owner.orgId}/documents/generations/${generation}?document=${encodeURIComponent(name)}`,
    )
    expect(res.status).toBe(200)
    return res.body
  }
  /** What a replica refused as holding an ended generation does: carry its edits across. */
  const carryAcross = async (name: string, old: Y.Doc): Promise<LiveClient> => {
    const ended = await endedGeneration(name, generationOf(old))
    const edits = editsToCarry(
      name,
      ended.base ?? {},
      Y.decodeStateVector(Buffer.from(ended.stateVector, 'base64')),
      old,
    )
    const fresh = await connectProvider(server.url, name, await owner.syncToken())
    carry(
      fresh.doc,
      edits.filter((e) => e.doc === name),
    )
    await eventually(() => (fresh.provider.hasUnsyncedChanges ? undefined : true), 10_000)
    return fresh
  }

  test('a document whose history is mostly tombstones starts over from its current state: the same board, a fraction of the bytes', async () => {
    const kept: string[] = []
    for (let i = 0; i < 40; i++) {
      const { task } = await agent.ok('create_task', {
        columnId,
        title: `Card ${i} ${'with a longer title '.repeat(3)}`,
      })
      if (i % 8 === 0) kept.push(task.id)
      else await agent.ok('archive_task', { taskId: task.id })
    }
    const before = await agent.ok('get_board', {})
    const bytesBefore = await storedBytes(board())
    const done = await server.app.live.rebase(board())
    expect(done.ended).toBe(0)
    expect(done.generation).toBe(1)
    const bytesAfter = await storedBytes(board())
    expect(bytesAfter).toBeLessThan(bytesBefore / 2)
    // The snapshot was stored ahead under a name of its own, then renamed in the swap.
    expect(await stagedRows()).toBe(0)
    const after = await agent.ok('get_board', {})
    expect(after.tasks).toEqual(before.tasks)
    expect(after.columns).toEqual(before.columns)
    // One stored row, generation 1 in the document, generation 0 recorded as ended.
    const rows = await server.storage.db.query<{ level: number }>(
      'select level from doc_updates where doc_name = $1',
      [board()],
    )
    expect(rows).toEqual([{ level: 2 }])
    expect(await server.app.live.read(board(), (doc) => generationOf(doc))).toBe(1)
    const ended = await endedGeneration(board(), 0)
    expect(Object.keys(ended.base?.tasks as object).sort()).toEqual([...kept].sort())
    // Archived cards stay readable by id.
    const archived = await agent.ok('get_task', {
      taskId: (before.tasks as { id: string }[])[0]?.id,
    })
    expect(archived.task).toBeDefined()
  })

  test('a provider holding the ended generation is refused with the close reason "re-based", and again at every reconnection', async () => {
    const token = await owner.syncToken()
    const held = attach(server, board(), token, new Y.Doc())
    try {
      await eventually(() => (held.provider.isSynced ? true : undefined), 10_000)
      const generation = generationOf(held.doc)
      await server.app.live.rebase(board())
      await eventually(
        () => (held.closed.includes(CLOSE.rebased.reason) ? true : undefined),
        10_000,
      )
      // Connecting again with the same copy: refused again, and the server's copy keeps none
      // of it.
      held.destroy()
      const again = attach(server, board(), await owner.syncToken(), held.doc)
      try {
        await eventually(
          () => (again.closed.includes(CLOSE.rebased.reason) ? true : undefined),
          10_000,
        )
        expect(generationOf(again.doc)).toBe(generation)
        expect(await server.app.live.read(board(), (doc) => generationOf(doc))).toBe(generation + 1)
      } finally {
        again.destroy()
      }
    } finally {
      held.destroy()
    }
  })

  test('a program that cannot re-base starts from the new generation: a fresh copy syncs the current board', async () => {
    await server.app.live.rebase(board())
    const fresh = await connectProvider(server.url, board(), await owner.syncToken())
    try {
      const { tasks } = await agent.ok('get_board', {})
      expect(boardMaps(fresh.doc).tasks.size).toBe((tasks as unknown[]).length)
      expect(generationOf(fresh.doc)).toBe(
        await server.app.live.read(board(), (doc) => generationOf(doc)),
      )
    } finally {
      fresh.destroy()
    }
  })

  test("a replica's unsent edits are carried across by key: a title, a new card, a comment and a description typed offline all land on the new generation", async () => {
    const { task } = await agent.ok('create_task', {
      columnId,
      title: 'Edited offline',
      description: 'First line.',
    })
    const token = await owner.syncToken()
    const boardCopy = attach(server, board(), token, new Y.Doc())
    const cardCopy = attach(server, cardDocName(owner.orgId, task.id), token, new Y.Doc())
    await eventually(
      () => (boardCopy.provider.isSynced && cardCopy.provider.isSynced ? true : undefined),
      10_000,
    )
    // Offline: nothing reaches the server.
    boardCopy.destroy()
    cardCopy.destroy()
    const tasks = boardMaps(boardCopy.doc).tasks
    tasks.get(task.id)?.set('title', 'Renamed offline')
    const added = crypto.randomUUID()
    const card = new Y.Map<unknown>()
    for (const [k, v] of Object.entries(tasks.get(task.id)?.toJSON() ?? {})) card.set(k, v)
    card.set('title', 'Created offline')
    tasks.set(added, card)
    const comment = new Y.Map<unknown>()
    comment.set('taskId', task.id)
    comment.set('body', 'Written offline')
    const commentId = crypto.randomUUID()
    cardMaps(cardCopy.doc).comments.set(commentId, comment)
    cardMaps(cardCopy.doc).description.insert('First line.'.length, ' Second line.')
    // Meanwhile an agent writes, and both documents start over.
    await agent.ok('add_comment', { taskId: task.id, body: 'An agent was here' })
    await server.app.live.rebase(board())
    await server.app.live.rebase(cardDocName(owner.orgId, task.id))

    const b = await carryAcross(board(), boardCopy.doc)
    const c = await carryAcross(cardDocName(owner.orgId, task.id), cardCopy.doc)
    try {
      const got = await eventuallyAsync(async () => {
        const answer = await agent.ok('get_task', { taskId: task.id })
        return answer.task.title === 'Renamed offline' && answer.comments.length === 2
          ? answer
          : undefined
      }, 10_000)
      expect(got.task.description).toBe('First line. Second line.')
      expect((got.comments as { body: string }[]).map((x) => x.body).sort()).toEqual([
        'An agent was here',
        'Written offline',
      ])
      const { task: created } = await agent.ok('get_task', { taskId: added })
      expect(created.title).toBe('Created offline')
    } finally {
      b.destroy()
      c.destroy()
    }
  })

  test('a value the replica merely missed is not carried back: only its own unsent edits are', async () => {
    const { task } = await agent.ok('create_task', { columnId, title: 'Missed' })
    const copy = attach(server, board(), await owner.syncToken(), new Y.Doc())
    await eventually(() => (copy.provider.isSynced ? true : undefined), 10_000)
    copy.destroy()
    // The agent renames it while the replica is away; the replica edits another field.
    await agent.ok('update_task', { taskId: task.id, title: 'Renamed by the agent' })
    boardMaps(copy.doc).tasks.get(task.id)?.set('priority', 'high')
    await server.app.live.rebase(board())
    const b = await carryAcross(board(), copy.doc)
    try {
      const t = await eventuallyAsync(async () => {
        const { task: got } = await agent.ok('get_task', { taskId: task.id })
        return got.priority === 'high' ? got : undefined
      }, 10_000)
      expect(t.title).toBe('Renamed by the agent')
    } finally {
      b.destroy()
    }
  })

  test('agent writes made while a re-base runs are all kept: each acknowledged write is on the new generation', async () => {
    const writes = Array.from({ length: 30 }, (_, i) =>
      agent.call('create_task', { columnId, title: `During ${i}` }),
    )
    const rebased = server.app.live.rebase(board())
    const answers = await Promise.all(writes)
    await rebased
    const created = answers.filter((a) => a.status === 200).map((a) => a.body.task.id as string)
    expect(created).toHaveLength(30)
    const { tasks } = await agent.ok('get_board', {})
    const ids = new Set((tasks as { id: string }[]).map((t) => t.id))
    for (const id of created) expect(ids.has(id)).toBe(true)
    // And the stored form agrees after a cold load.
    const doc = new Y.Doc()
    await loadInto(server.storage.db, board(), doc)
    for (const id of created) expect(boardMaps(doc).tasks.has(id)).toBe(true)
  })

  test("a claimed card's description stays locked while its board is re-based: a person's edit made while no copy of the board is in memory is reverted", async () => {
    const { task } = await agent.ok('create_task', {
      columnId,
      title: 'Locked across a re-base',
      description: 'the plan',
    })
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Ada' })
    const card = await connectProvider(
      server.url,
      cardDocName(owner.orgId, task.id),
      await owner.syncToken(),
    )
    try {
      await server.app.live.rebase(board())
      // Nobody has the board open: it stays out of memory until something reads it.
      cardMaps(card.doc).description.insert(0, 'sneaked in ')
      await eventually(
        () => (cardMaps(card.doc).description.toString() === 'the plan' ? true : undefined),
        10_000,
      )
      expect((await agent.ok('get_task', { taskId: task.id })).task.description).toBe('the plan')
    } finally {
      card.destroy()
      await agent.ok('release_task', { taskId: task.id, agentName: 'Ada' })
    }
  })

  test("a person's edit of the document's generation is reverted", async () => {
    const copy = await connectProvider(server.url, board(), await owner.syncToken())
    try {
      const generation = generationOf(copy.doc)
      copy.doc.getMap('meta').set('generation', generation + 5)
      await eventually(() => (generationOf(copy.doc) === generation ? true : undefined), 10_000)
      expect(await server.app.live.read(board(), (doc) => generationOf(doc))).toBe(generation)
    } finally {
      copy.destroy()
    }
  })

  test('an edit made the moment the server re-based the document (before the replica heard of it) is carried across', async () => {
    const { task } = await agent.ok('create_task', { columnId, title: 'Raced' })
    const name = cardDocName(owner.orgId, task.id)
    const token = await owner.syncToken()
    // Written once by this replica before: its client is one of the ended generation's.
    const first = await connectProvider(server.url, name, token)
    const held = attach(server, name, token, first.doc)
    first.destroy()
    await eventually(() => (held.provider.isSynced ? true : undefined), 10_000)
    const said = new Y.Map<unknown>()
    said.set('taskId', task.id)
    said.set('body', 'Said before')
    cardMaps(held.doc).comments.set(crypto.randomUUID(), said)
    await eventually(() => (held.provider.hasUnsyncedChanges ? undefined : true), 10_000)
    await server.app.live.rebase(name)
    const id = crypto.randomUUID()
    const comment = new Y.Map<unknown>()
    comment.set('taskId', task.id)
    comment.set('body', 'Said at that moment')
    cardMaps(held.doc).comments.set(id, comment)
    await eventually(() => (held.closed.includes(CLOSE.rebased.reason) ? true : undefined), 10_000)
    held.destroy()
    const fresh = await carryAcross(name, held.doc)
    try {
      await eventuallyAsync(async () => {
        const rows = await server.storage.db.query('select id from comments where id = $1', [id])
        return rows.length === 1 ? true : undefined
      }, 10_000)
    } finally {
      fresh.destroy()
    }
  })

  test('a document whose stored form tombstones dominate re-bases by itself: compaction asks for it', async () => {
    const ended = async () =>
      (
        await server.storage.db.query<{ n: number }>(
          'select count(*)::int as n from doc_generations where doc_name = $1',
          [board()],
        )
      )[0]?.n ?? 0
    const before = await ended()
    // Cards created and archived: each leaves tombstones in the board document. Compaction
    // takes a snapshot (which finds them dominating) once its merged rows weigh as much as
    // the last snapshot, or at the latest once 16 merges of 128 updates have run: within
    // 1,100 cards.
    for (let i = 0; i < 1_500 && (await ended()) === before; i++) {
      const { task } = await agent.ok('create_task', {
        columnId,
        title: `Passing through ${i} ${'x'.repeat(60)}`,
      })
      await agent.ok('archive_task', { taskId: task.id })
    }
    // Compaction runs on a low-priority thread: a machine busy with other work (the whole
    // suite, two files at a time) can starve it for tens of seconds.
    await eventuallyAsync(async () => ((await ended()) > before ? true : undefined), 60_000)
    // The live copy is the new generation, and the archived cards stay readable by id.
    expect(await server.app.live.read(board(), (doc) => generationOf(doc))).toBe(before + 1)
    const rows = await server.storage.db.query<{ id: string }>(
      'select id from archived_tasks where org_id = $1 limit 1',
      [owner.orgId],
    )
    const { task } = await agent.ok('get_task', { taskId: rows[0]?.id })
    expect(task.archivedAt).not.toBeNull()
  }, 180_000)

  test('a re-base that fails in its swap changes nothing: the same generation, the same board, no staged snapshot left', async () => {
    const { task } = await agent.ok('create_task', { columnId, title: 'Before a failed re-base' })
    const before = await agent.ok('get_board', {})
    const generation = await server.app.live.read(board(), (doc) => generationOf(doc))
    const db = server.storage.db
    await db.query(`create or replace function refuse_rename() returns trigger language plpgsql as $$
      begin raise exception 'injected: no rename'; end $$`)
    await db.query(
      'create trigger refuse_rename before update of doc_name on doc_updates for each row execute function refuse_rename()',
    )
    try {
      await expect(server.app.live.rebase(board())).rejects.toThrow(/injected: no rename/)
    } finally {
      await db.query('drop trigger refuse_rename on doc_updates')
      await db.query('drop function refuse_rename()')
    }
    expect(await stagedRows()).toBe(0)
    expect(await server.app.live.read(board(), (doc) => generationOf(doc))).toBe(generation)
    expect((await agent.ok('get_board', {})).tasks).toEqual(before.tasks)
    await agent.ok('update_task', { taskId: task.id, title: 'After a failed re-base' })
    const done = await server.app.live.rebase(board())
    expect(done.generation).toBe(generation + 1)
    expect(await stagedRows()).toBe(0)
  })

  test('after a re-base the document reloads from what the re-base stored; when storage no longer holds exactly that (its rows rewritten meanwhile) it reads storage: the same board either way', async () => {
    await agent.ok('create_task', { columnId, title: 'Reloaded after a re-base' })
    const before = await agent.ok('get_board', {})
    const first = await server.app.live.rebase(board())
    // The rows the re-base stored get other ids before the next load: what it holds no
    // longer matches storage, so the load reads storage.
    await server.storage.db.query(
      `update doc_updates set id = nextval(pg_get_serial_sequence('doc_updates', 'id'))
        where doc_name = $1`,
      [board()],
    )
    expect((await agent.ok('get_board', {})).tasks).toEqual(before.tasks)
    expect(await server.app.live.read(board(), (doc) => generationOf(doc))).toBe(first.generation)
    // And loaded from what it holds.
    await agent.ok('update_task', {
      taskId: (before.tasks as { id: string }[]).at(-1)?.id,
      title: 'Renamed',
    })
    const renamed = await agent.ok('get_board', {})
    const second = await server.app.live.rebase(board())
    expect(second.generation).toBe(first.generation + 1)
    expect((await agent.ok('get_board', {})).tasks).toEqual(renamed.tasks)
    expect(await server.app.live.read(board(), (doc) => generationOf(doc))).toBe(second.generation)
  })

  test('a snapshot staged by a re-base that never swapped (its process died) is swept after an hour; one staged now is kept', async () => {
    const db = server.storage.db
    const abandoned = `${board()}#rebase:${crypto.randomUUID()}`
    const inFlight = `${board()}#rebase:${crypto.randomUUID()}`
    await db.query(
      `insert into doc_updates (doc_name, data, level, created_at)
       values ($1, $2, $3, now() - interval '61 minutes')`,
      [abandoned, Buffer.from([1, 2, 3]), LEVEL.snapshot],
    )
    await db.query('insert into doc_updates (doc_name, data, level) values ($1, $2, $3)', [
      inFlight,
      Buffer.from([4, 5, 6]),
      LEVEL.snapshot,
    ])
    const boardRows = await storedBytes(board())
    expect(await dropAbandonedStaging(db)).toBe(1)
    const left = await db.query<{ doc_name: string }>(
      "select doc_name from doc_updates where doc_name like '%#rebase:%'",
    )
    expect(left.map((r) => r.doc_name)).toEqual([inFlight])
    expect(await storedBytes(board())).toBe(boardRows)
    await db.query('delete from doc_updates where doc_name = $1', [inFlight])
  })

  test('an ended generation of another organisation, or a name that is not a document, is refused', async () => {
    const other = `${crypto.randomUUID()}/board`
    const res = await owner.request(
      'GET',
      `/api/app/orgs/${owner.orgId}/documents/generations/0?document=${other}`,
    )
    expect(res.status).toBe(400)
    const missing = await owner.request(
      'GET',
      `/api/app/orgs/${owner.orgId}/documents/generations/99?document=${board()}`,
    )
    expect(missing.status).toBe(404)
  })
})
