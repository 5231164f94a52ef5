import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { boardDocName, boardMaps, readStoredTask } from '../../shared/board-doc.ts'
import { LIMITS, PRIORITIES, TASK_TYPES } from '../../shared/constants.ts'
import {
  type Agent,
  connectProvider,
  eventually,
  type LiveClient,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'

/** One edit a person's client might send, valid or not. */
type Edit =
  | { kind: 'title'; card: number; value: string }
  | { kind: 'priority'; card: number; value: string | null }
  | { kind: 'type'; card: number; value: string | null }
  | { kind: 'tags'; card: number; value: string[] }
  | { kind: 'move'; card: number; column: number }
  | { kind: 'description'; card: number; at: number; text: string }
  | { kind: 'claims'; card: number }
  | { kind: 'delete'; card: number }
  | { kind: 'comment'; card: number; body: string }
  | { kind: 'forge'; card: number; field: 'createdAt' | 'createdByEmail' }

const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({
    kind: fc.constant('title' as const),
    card: fc.nat(5),
    value: fc.string({ minLength: 0, maxLength: 600 }),
  }),
  fc.record({
    kind: fc.constant('priority' as const),
    card: fc.nat(5),
    value: fc.constantFrom<string | null>(...PRIORITIES, null, 'asap', ''),
  }),
  fc.record({
    kind: fc.constant('type' as const),
    card: fc.nat(5),
    value: fc.constantFrom<string | null>(...TASK_TYPES, null, 'epic'),
  }),
  fc.record({
    kind: fc.constant('tags' as const),
    card: fc.nat(5),
    value: fc.array(fc.string({ minLength: 0, maxLength: 45 }), { maxLength: 24 }),
  }),
  fc.record({ kind: fc.constant('move' as const), card: fc.nat(5), column: fc.nat(4) }),
  fc.record({
    kind: fc.constant('description' as const),
    card: fc.nat(5),
    at: fc.nat(50),
    text: fc.oneof(fc.string({ maxLength: 40 }), fc.constant('z'.repeat(20_001))),
  }),
  fc.record({ kind: fc.constant('claims' as const), card: fc.nat(5) }),
  fc.record({ kind: fc.constant('delete' as const), card: fc.nat(5) }),
  fc.record({
    kind: fc.constant('comment' as const),
    card: fc.nat(5),
    body: fc.string({ minLength: 0, maxLength: 30 }),
  }),
  fc.record({
    kind: fc.constant('forge' as const),
    card: fc.nat(5),
    field: fc.constantFrom('createdAt' as const, 'createdByEmail' as const),
  }),
)

describe("fuzzing people's edits (pglite)", () => {
  let server: TestServer
  let owner: Person
  let agent: Agent
  let clients: LiveClient[]
  let cards: string[]
  let claimed: Set<string>
  let columns: string[]

  beforeAll(async () => {
    server = await startServer('pglite')
    ;({ owner, agent } = await ownerWithAgent(server.url))
    columns = (await agent.ok('list_columns')).columns.map((c: { id: string }) => c.id)
    cards = []
    for (let i = 0; i < 6; i++) {
      cards.push(
        (
          await agent.ok('create_task', {
            columnId: columns[0],
            title: `card ${i}`,
            description: 'base',
          })
        ).task.id,
      )
    }
    claimed = new Set([cards[0] as string, cards[1] as string])
    for (const id of claimed) await agent.ok('claim_task', { taskId: id, agentName: 'Locksmith' })
    const token = await owner.syncToken()
    clients = await Promise.all(
      [0, 1, 2].map(() => connectProvider(server.url, boardDocName(owner.orgId), token)),
    )
    await eventually(() =>
      clients.every(
        (c) => claimed.size === [...claimed].filter((id) => boardMaps(c.doc).claims.has(id)).length,
      )
        ? true
        : undefined,
    )
  })
  afterAll(async () => {
    for (const c of clients) c.destroy()
    await server.close()
  })

  function apply(client: LiveClient, e: Edit): void {
    const maps = boardMaps(client.doc)
    const id = cards[e.card % cards.length] as string
    const m = maps.tasks.get(id)
    switch (e.kind) {
      case 'title':
        m?.set('title', e.value)
        break
      case 'priority':
        m?.set('priority', e.value)
        break
      case 'type':
        m?.set('type', e.value)
        break
      case 'tags':
        m?.set('tags', e.value)
        break
      case 'move':
        m?.set('columnId', e.column < columns.length ? columns[e.column] : crypto.randomUUID())
        break
      case 'description':
        // Version 3: the description lives in the card document; one put on a board card
        // is refused (reverted), whatever its form.
        m?.set('description', e.at % 2 === 0 ? new Y.Text(e.text) : e.text)
        break
      case 'claims':
        maps.claims.set(id, {
          taskId: id,
          holder: 'forged',
          expiresAt: '2999-01-01T00:00:00.000Z',
        } as never)
        break
      case 'delete':
        maps.tasks.delete(id)
        break
      case 'comment': {
        // Comments live in each card's document now: one put in the board is a stray root.
        const c = new Y.Map<unknown>()
        c.set('taskId', id)
        c.set('body', e.body)
        client.doc.getMap('comments').set(crypto.randomUUID(), c)
        break
      }
      case 'forge':
        m?.set(e.field, 'forged')
        break
      default:
        e satisfies never
    }
  }

  test('whatever people send, the server document satisfies the schema and every lock', async () => {
    const lockedBefore = await server.app.live.read(
      boardDocName(owner.orgId),
      (doc) =>
        new Map(
          [...claimed].map((id) => [
            id,
            JSON.stringify(readStoredTask(id, boardMaps(doc).tasks.get(id) as Y.Map<unknown>)),
          ]),
        ),
    )
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(2), edit), { minLength: 1, maxLength: 12 }),
        async (steps) => {
          for (const [who, e] of steps) apply(clients[who] as LiveClient, e)
          // Let every client's edits reach the server and the server's answers come back.
          await eventually(
            () => (clients.every((c) => !c.provider.hasUnsyncedChanges) ? true : undefined),
            10_000,
          )
          const check = await server.app.live.read(boardDocName(owner.orgId), (doc) => {
            const maps = boardMaps(doc)
            const problems: string[] = []
            for (const id of cards) {
              const m = maps.tasks.get(id)
              if (!m) {
                problems.push(`card ${id} was removed`)
                continue
              }
              const t = readStoredTask(id, m)
              if (t.title.length < 1 || t.title.length > LIMITS.taskTitle.max)
                problems.push(`title length ${t.title.length}`)
              if (m.has('description')) problems.push('a description was kept on the board')
              if (t.priority !== null && !(PRIORITIES as readonly string[]).includes(t.priority))
                problems.push(`priority ${t.priority}`)
              if (t.type !== null && !(TASK_TYPES as readonly string[]).includes(t.type))
                problems.push(`type ${t.type}`)
              if (
                t.tags.length > LIMITS.tagsPerCard ||
                t.tags.some((x) => x.length > LIMITS.tagLength || x.trim() === '')
              ) {
                problems.push('tags out of limits')
              }
              if (!maps.columns.has(t.columnId)) problems.push('card in a missing column')
              if (t.createdByEmail === 'forged' || t.createdAt === 'forged')
                problems.push('server-owned field forged')
              if (claimed.has(id) && JSON.stringify(t) !== lockedBefore.get(id))
                problems.push(`claimed card ${id} changed`)
            }
            maps.claims.forEach((c, id) => {
              if ((c as { holder?: string }).holder === 'forged' || !claimed.has(id))
                problems.push(`claims entry for ${id} forged`)
            })
            if (doc.getMap('comments').size > 0) problems.push('a stray comments map was kept')
            return problems
          })
          expect(check).toEqual([])
          // Every replica converges on the server's state.
          const server_ = await server.app.live.read(boardDocName(owner.orgId), (doc) =>
            JSON.stringify(boardMaps(doc).tasks.toJSON()),
          )
          await eventually(
            () =>
              clients.every((c) => JSON.stringify(boardMaps(c.doc).tasks.toJSON()) === server_)
                ? true
                : undefined,
            10_000,
          )
        },
      ),
      { numRuns: 100 },
    )
  }, 240_000)
})
