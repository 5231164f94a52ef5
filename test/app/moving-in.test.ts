import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Agent, Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/import/${name}`, import.meta.url))

async function upload(person: Person, body: Buffer | string, type: string, dryRun = false) {
  const res = await fetch(
    `${person.url}/api/app/orgs/${person.orgId}/import${dryRun ? '?dryRun=1' : ''}`,
    {
      method: 'POST',
      headers: { cookie: person.cookie, 'content-type': type },
      body: typeof body === 'string' ? body : new Uint8Array(body),
    },
  )
  return { status: res.status, body: (await res.json()) as any }
}

/** A new organisation, its person and an agent to read it with. */
async function fresh(url: string) {
  const person = new Person(url)
  await person.signUp()
  return { person, reader: new Agent(url, await person.createKey('reader')) }
}

/** Every card, on the board and archived, by title. */
async function allCards(reader: Agent) {
  const board = await reader.ok('get_board')
  const byTitle = new Map<string, any>()
  for (const t of board.tasks) byTitle.set(t.title, await reader.ok('get_task', { taskId: t.id }))
  return { board, byTitle }
}

describe.each(STORAGES)('moving in from Trello, GitHub and Linear (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(kind)
  })
  afterAll(() => server.close())

  test('a preview counts what a Trello board would make and names its unmapped fields, writing nothing', async () => {
    const { person, reader } = await fresh(server.url)
    const res = await upload(person, fixture('trello-board.json'), 'application/json', true)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toMatchObject({
      dryRun: true,
      source: { kind: 'trello', name: 'Launch plan' },
      counts: { columns: 3, cards: 2, archived: 1, comments: 2 },
    })
    expect(Object.keys(res.body.unmapped)).toEqual(
      expect.arrayContaining(['cards.due', 'cards.idMembers', 'cards.badges', 'cards.cover']),
    )
    expect(res.body.mapped.lists).toMatch(/columns/)
    expect((await reader.ok('get_board')).tasks).toEqual([])
  })

  test('Trello: lists become columns, labels tags, checklists go into the description, comments keep their authors, closed cards are archived', async () => {
    const { person, reader } = await fresh(server.url)
    const res = await upload(person, fixture('trello-board.json'), 'application/json')
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const { columns } = await reader.ok('list_columns')
    expect(columns.map((c: { title: string }) => c.title)).toEqual(['To Do', 'Doing', 'Done'])
    const { board, byTitle } = await allCards(reader)
    expect(board.tasks.map((t: { title: string }) => t.title).sort()).toEqual([
      'Ship the landing page',
      'Write the press release',
    ])
    const press = byTitle.get('Write the press release')
    expect(press.task.tags).toEqual(['Marketing', 'red'])
    expect(press.task.columnId).toBe(columns[0].id)
    expect(press.task.description).toContain('Draft, review, send.')
    expect(press.task.description).toContain(
      '### Steps\n- [x] First draft\n- [ ] Review with legal',
    )
    // Unknown fields are kept in the description.
    expect(press.task.description).toContain('due: 2026-12-01T12:00:00.000Z')
    expect(press.task.description).toContain('members: Jane Doe')
    expect(press.comments.map((c: any) => [c.authorEmail, c.body])).toEqual([
      ['Jane Doe (@janedoe)', 'First draft is in the shared folder.'],
      ['Sam Lee (@samlee)', 'Legal wants one more pass.'],
    ])
    const found = await reader.ok('search_tasks', { query: 'venue', includeArchived: true })
    expect(found.tasks.map((t: any) => [t.title, t.archivedAt !== null])).toEqual([
      ['Book the venue', true],
    ])
  })

  test('GitHub issues: labels are tags, comments keep their authors oldest first, assignees and milestone are named in the description, closed issues are archived', async () => {
    const { person, reader } = await fresh(server.url)
    const res = await upload(person, fixture('github-issues.json'), 'application/json')
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.counts).toMatchObject({ cards: 1, archived: 1, comments: 2 })
    expect(Object.keys(res.body.unmapped)).toEqual(
      expect.arrayContaining(['assignees', 'milestone', 'url', 'id']),
    )
    const { byTitle } = await allCards(reader)
    const crash = byTitle.get('#12 Crash when saving a board with emoji titles')
    expect(crash.task.tags).toEqual(['bug', 'priority: high'])
    expect(crash.task.description).toContain('Name a card 🚀')
    expect(crash.task.description).toContain('assignees: octocat, hubot')
    expect(crash.task.description).toContain('milestone: v1.2')
    expect(crash.task.createdByEmail).toBe('reporter')
    expect(crash.comments.map((c: any) => [c.authorEmail, c.body])).toEqual([
      ['reporter', 'Happens on Firefox too.'],
      ['octocat', 'Reproduced on main.'],
    ])
    const closed = await reader.ok('search_tasks', {
      query: 'export format',
      includeArchived: true,
    })
    expect(closed.tasks).toHaveLength(1)
    expect(closed.tasks[0].archivedAt).not.toBeNull()
  })

  test('Linear CSV: status becomes the column, priority is kept, labels are tags, estimate and cycle stay in the description, canceled issues are archived', async () => {
    const { person, reader } = await fresh(server.url)
    const res = await upload(person, fixture('linear-issues.csv'), 'text/csv')
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.counts).toMatchObject({ columns: 4, cards: 3, archived: 1 })
    expect(Object.keys(res.body.unmapped)).toEqual(
      expect.arrayContaining(['Estimate', 'Cycle Name', 'Project', 'Assignee', 'Due Date']),
    )
    const { columns } = await reader.ok('list_columns')
    expect(columns.map((c: { title: string }) => c.title)).toEqual([
      'In Progress',
      'Todo',
      'Canceled',
      'Done',
    ])
    const { byTitle } = await allCards(reader)
    const rate = byTitle.get('ENG-101 Rate-limit the import endpoint')
    expect(rate.task.priority).toBe('high')
    expect(rate.task.tags).toEqual(['Backend', 'Security'])
    expect(rate.task.description).toContain('Second line with a "quote", and a comma.')
    expect(rate.task.description).toContain('- Estimate: 3')
    expect(rate.task.description).toContain('- Cycle Name: Cycle 14')
    expect(byTitle.get('ENG-102 Write the Linear importer').task.priority).toBe('normal')
    expect(byTitle.get('ENG-95 Ship v1').task.priority).toBe('urgent')
    const spike = await reader.ok('search_tasks', { query: 'spike', includeArchived: true })
    expect(spike.tasks[0].archivedAt).not.toBeNull()
  })

  test('a file that is none of the formats is refused naming what it expected, and nothing is written', async () => {
    const { person, reader } = await fresh(server.url)
    const cases: [Buffer | string, string, RegExp][] = [
      ['{"hello": "world"}', 'application/json', /neither a Trello board export/],
      ['not json at all', 'application/json', /not JSON/],
      ['[1, 2, 3]', 'application/json', /not GitHub issues/],
      ['a,b,c\n1,2,3\n', 'text/csv', /not a Linear export/],
      ['ID,Title,Status\nX,"unterminated', 'text/csv', /quoted field/],
    ]
    for (const [body, type, message] of cases) {
      const res = await upload(person, body, type)
      expect(res.status, String(body)).toBe(400)
      expect(res.body.error).toMatch(message)
    }
    expect((await reader.ok('get_board')).tasks).toEqual([])
  })

  test('a Trello, GitHub or Linear file over the size cap is refused with 413, nothing written', async () => {
    const small = await startServer(kind, { importMaxBytes: 512 })
    try {
      const { person, reader } = await fresh(small.url)
      const res = await upload(person, fixture('trello-board.json'), 'application/json')
      expect(res.status).toBe(413)
      expect(res.body.error).toMatch(/IMPORT_MAX_BYTES/)
      expect((await reader.ok('get_board')).tasks).toEqual([])
    } finally {
      await small.close()
    }
  })
})
