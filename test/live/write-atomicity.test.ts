import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import {
  type Agent,
  connectProvider,
  eventually,
  type LiveClient,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/**
 * "One action = one Postgres transaction ... An action whose commit fails leaves no change
 * visible to anyone." A real trigger makes the write's own INSERT fail after the document
 * change was computed; nobody may see it, and the next write must work on a clean state.
 */
describe.each(STORAGES)('a write whose commit fails leaves nothing visible (%s)', (kind) => {
  let server: TestServer
  let agent: Agent
  let owner: Person
  let live: LiveClient
  let columnId: string

  beforeAll(async () => {
    server = await startServer(kind)
    ;({ agent, owner } = await ownerWithAgent(server.url))
    columnId = (await agent.ok('list_columns')).columns[0].id
    live = await connectProvider(server.url, boardDocName(owner.orgId), await owner.syncToken())
    await server.storage.db.query('create table fail_next (n int)')
    await server.storage.db.query(`
      create function fail_if_armed() returns trigger language plpgsql as $$
      begin
        if exists (select 1 from fail_next) then
          raise exception 'injected commit failure';
        end if;
        return new;
      end $$`)
    await server.storage.db.query(
      'create trigger fail_changes before insert on changes for each row execute function fail_if_armed()',
    )
  })
  afterAll(async () => {
    live.destroy()
    await server.close()
  })

  const arm = () => server.storage.db.query('insert into fail_next values (1)')
  const disarm = () => server.storage.db.query('delete from fail_next')

  test('a failed create_task is a 500 with a body that leaks nothing, and no card appears anywhere', async () => {
    await arm()
    const res = await agent.call('create_task', { columnId, title: 'Never committed' })
    await disarm()
    expect(res.status).toBe(500)
    expect(res.body).toEqual({ error: 'Internal server error' })

    const { task } = await agent.ok('create_task', { columnId, title: 'Committed after' })
    await eventually(() => boardMaps(live.doc).tasks.get(task.id))
    const titles = [...boardMaps(live.doc).tasks.values()].map((m) => m.get('title'))
    expect(titles).not.toContain('Never committed')
    const board = await agent.ok('get_board')
    expect(board.tasks.map((t: { title: string }) => t.title)).toEqual(['Committed after'])
    const stored = await server.storage.db.query('select 1 from doc_updates where doc_name = $1', [
      boardDocName(owner.orgId),
    ])
    expect(stored.length).toBeGreaterThan(0)
  })

  test('a failed update_task leaves the card as it was, and later writes build on the committed state', async () => {
    const { task } = await agent.ok('create_task', {
      columnId,
      title: 'Original',
      description: 'kept',
    })
    await arm()
    expect(
      (await agent.call('update_task', { taskId: task.id, title: 'Lost', description: 'lost' }))
        .status,
    ).toBe(500)
    await disarm()
    const after = await agent.ok('get_task', { taskId: task.id })
    expect(after.task.title).toBe('Original')
    expect(after.task.description).toBe('kept')
    const moved = await agent.ok('update_task', {
      taskId: task.id,
      description: 'kept and extended',
    })
    expect(moved.task.title).toBe('Original')
    expect(moved.task.description).toBe('kept and extended')
    expect((await agent.ok('get_task', { taskId: task.id })).task.description).toBe(
      'kept and extended',
    )
    const m = await eventually(() => boardMaps(live.doc).tasks.get(task.id))
    expect(m.get('title')).toBe('Original')
  })

  test('bad input is refused before anything is written', async () => {
    const before = await server.storage.db.query<{ n: number }>(
      'select count(*)::int as n from doc_updates',
    )
    const res = await agent.call('set_task_tags', {
      taskId: crypto.randomUUID(),
      tags: ['x'.repeat(41)],
    })
    expect(res.status).toBe(400)
    const after = await server.storage.db.query<{ n: number }>(
      'select count(*)::int as n from doc_updates',
    )
    expect(after[0]?.n).toBe(before[0]?.n)
  })

  test('a document reloaded from storage holds exactly the committed writes', async () => {
    const { task } = await agent.ok('create_task', { columnId, title: 'Durable' })
    live.destroy()
    // Wait until nothing holds the document in memory any more, then read it back from storage.
    await server.app.live.close()
    const board = await agent.ok('get_board')
    const titles = board.tasks.map((t: { title: string }) => t.title)
    expect(titles).toContain('Durable')
    expect(titles).not.toContain('Never committed')
    expect(titles).not.toContain('Lost')
    expect(board.tasks.find((t: { id: string }) => t.id === task.id).title).toBe('Durable')
  })
})

/**
 * The write path overlaps one write's computing with the previous write's commit. A commit
 * that fails in the middle of concurrent writes must take down exactly the writes computed
 * on top of it: what answered 200 is stored and visible, nothing else is, anywhere.
 */
describe.each(STORAGES)('concurrent writes around a failed commit stay exact (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(kind, { rateLimitPerKey: 100_000 })
    await server.storage.db.query(`
      create function refuse_poison() returns trigger language plpgsql as $$
      begin
        if position('POISON'::bytea in new.data) > 0 then
          raise exception 'injected commit failure';
        end if;
        return new;
      end $$`)
    await server.storage.db.query(
      'create trigger refuse_poison before insert on doc_updates for each row execute function refuse_poison()',
    )
  })
  afterAll(() => server.close())

  test('exactly the writes that answered 200 are stored, live and readable; later writes build on them', async () => {
    const { owner, agent } = await ownerWithAgent(server.url)
    const columnId = (await agent.ok('list_columns')).columns[0].id
    const live = await connectProvider(
      server.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    try {
      const titles = Array.from({ length: 30 }, (_, i) => (i % 7 === 3 ? `POISON ${i}` : `ok ${i}`))
      const results = await Promise.all(
        titles.map((title) => agent.call('create_task', { columnId, title })),
      )
      const answered = results
        .filter((r) => r.status === 200)
        .map((r) => r.body.task.title as string)
      for (const [i, r] of results.entries()) {
        if (titles[i]?.startsWith('POISON')) expect(r.status).toBe(500)
        else expect([200, 500]).toContain(r.status)
      }
      expect(answered.length).toBeGreaterThan(0)
      const board = async () =>
        ((await agent.ok('get_board')).tasks as { title: string }[]).map((t) => t.title).sort()
      expect(await board()).toEqual([...answered].sort())
      const liveTitles = () =>
        [...boardMaps(live.doc).tasks.values()].map((m) => m.get('title') as string).sort()
      await eventually(() =>
        JSON.stringify(liveTitles()) === JSON.stringify([...answered].sort()) ? true : undefined,
      )

      // Later writes work on the committed state, including on cards made in the burst.
      const first = results.find((r) => r.status === 200)?.body.task.id
      const { task: after } = await agent.ok('create_task', { columnId, title: 'after the burst' })
      await agent.ok('move_task', { taskId: first, columnId })
      await agent.ok('update_task', { taskId: after.id, description: 'still consistent' })
      // And storage holds exactly the same: reload the document from it.
      live.destroy()
      await server.app.live.close()
      expect(await board()).toEqual([...answered, 'after the burst'].sort())
    } finally {
      live.destroy()
    }
  })
})
