import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { asStats, boardMaps, readStoredTask } from '../../shared/board-doc.ts'
import { cardMaps, readComment, statsOf } from '../../shared/card-doc.ts'
import { LIMITS } from '../../shared/constants.ts'
import { boardDocName, cardDocName } from '../../shared/doc-names.ts'
import { CLOSE } from '../../shared/live-protocol.ts'
import { carry, type DocJson, editsToCarry, generationOf } from '../../shared/rebase.ts'
import {
  type Agent,
  eventually,
  eventuallyAsync,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/**
 * The whole live model at once, at random: several people's apps (each a socket carrying
 * the board's document and every card's), editing the board and the cards' threads,
 * going offline and coming back, while an agent writes, claims, archives and people
 * restore. Whatever happens, once everyone is back online:
 * - every replica converges on the server's documents;
 * - the documents satisfy the schema, and no person's edit got through a claim;
 * - Postgres agrees with the documents: the comment index, the archive, the stats.
 */

const CARDS = 4
const CLIENTS = 3

interface Replica {
  doc: Y.Doc
  provider: HocuspocusProvider
}

interface Client {
  socket: HocuspocusProviderWebsocket
  board: Replica
  cards: Map<string, Replica>
  online: boolean
  token: string
}

type Step =
  | { kind: 'title'; who: number; card: number; text: string }
  | { kind: 'move'; who: number; card: number; column: number }
  | { kind: 'describe'; who: number; card: number; text: string }
  | { kind: 'archive'; who: number; card: number }
  | { kind: 'comment'; who: number; card: number; body: string }
  | { kind: 'editComment'; who: number; card: number; body: string }
  | { kind: 'offline'; who: number }
  | { kind: 'online'; who: number }
  | { kind: 'agentMove'; card: number; column: number }
  | { kind: 'agentComment'; card: number }
  | { kind: 'agentClaim'; card: number }
  | { kind: 'agentRelease'; card: number }
  | { kind: 'agentArchive'; card: number }
  | { kind: 'restore'; card: number }
  /** The server starts the board or a card's document over as a new generation. */
  | { kind: 'rebase'; target: number | 'board' }

const who = fc.nat(CLIENTS - 1)
const card = fc.nat(CARDS - 1)
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('title' as const),
    who,
    card,
    // Sometimes over the limit: the server reverts it.
    text: fc.oneof(fc.string({ minLength: 1, maxLength: 30 }), fc.constant('x'.repeat(501))),
  }),
  fc.record({ kind: fc.constant('move' as const), who, card, column: fc.nat(3) }),
  fc.record({
    kind: fc.constant('describe' as const),
    who,
    card,
    text: fc.string({ maxLength: 10 }),
  }),
  fc.record({ kind: fc.constant('archive' as const), who, card }),
  fc.record({
    kind: fc.constant('comment' as const),
    who,
    card,
    body: fc.string({ minLength: 1, maxLength: 40 }),
  }),
  fc.record({
    kind: fc.constant('editComment' as const),
    who,
    card,
    body: fc.string({ minLength: 1, maxLength: 40 }),
  }),
  fc.record({ kind: fc.constant('offline' as const), who }),
  fc.record({ kind: fc.constant('online' as const), who }),
  fc.record({ kind: fc.constant('agentMove' as const), card, column: fc.nat(3) }),
  fc.record({ kind: fc.constant('agentComment' as const), card }),
  fc.record({ kind: fc.constant('agentClaim' as const), card }),
  fc.record({ kind: fc.constant('agentRelease' as const), card }),
  fc.record({ kind: fc.constant('agentArchive' as const), card }),
  fc.record({ kind: fc.constant('restore' as const), card }),
  fc.record({
    kind: fc.constant('rebase' as const),
    target: fc.oneof(card, fc.constant('board' as const)),
  }),
)

function attach(
  socket: HocuspocusProviderWebsocket,
  name: string,
  token: string,
  rebased: (replica: Replica) => void = () => {},
): Replica {
  const doc = new Y.Doc()
  const replica: Replica = {
    doc,
    provider: new HocuspocusProvider({
      websocketProvider: socket,
      name,
      document: doc,
      token,
      onClose: ({ event }) => {
        if (event.reason === CLOSE.rebased.reason) rebased(replica)
      },
    }),
  }
  replica.provider.attach()
  return replica
}

describe.each(STORAGES)('live documents converge whatever people and agents do (%s)', (kind) => {
  let server: TestServer
  let owner: Person
  let agent: Agent
  let columns: string[]
  let cards: string[]
  const clients: Client[] = []

  beforeAll(async () => {
    server = await startServer(kind, { rateLimitPerKey: 100_000 })
    ;({ owner, agent } = await ownerWithAgent(server.url))
    columns = (await agent.ok('list_columns')).columns.map((c: { id: string }) => c.id)
    cards = []
    for (let i = 0; i < CARDS; i++) {
      const { task } = await agent.ok('create_task', { columnId: columns[0], title: `card ${i}` })
      cards.push(task.id)
    }
    for (let i = 0; i < CLIENTS; i++) {
      const token = await owner.syncToken()
      const socket = new HocuspocusProviderWebsocket({
        url: `${server.url.replace(/^http/, 'ws')}/sync`,
      })
      const client = { socket, online: true, token } as Client
      client.board = attach(socket, boardDocName(owner.orgId), token, () =>
        carryAcross(client, 'board'),
      )
      client.cards = new Map(
        cards.map((id) => [
          id,
          attach(socket, cardDocName(owner.orgId, id), token, () => carryAcross(client, id)),
        ]),
      )
      clients.push(client)
    }
    await settle()
  })
  afterAll(async () => {
    for (const c of clients) {
      c.board.provider.destroy()
      for (const d of c.cards.values()) d.provider.destroy()
      c.socket.destroy()
    }
    await server.close()
  })

  /**
   * A socket reconnected before its close has happened stays closed (the provider ignores
   * the connect), so each change of state waits for the socket to get there.
   */
  async function goOffline(c: Client): Promise<void> {
    if (!c.online) return
    c.online = false
    c.socket.disconnect()
    await eventually(() => (c.socket.status === 'disconnected' ? true : undefined))
  }

  async function goOnline(c: Client): Promise<void> {
    if (c.online) return
    c.online = true
    await c.socket.connect()
    await eventually(() => (c.socket.status === 'connected' ? true : undefined), 10_000)
  }

  const providers = (c: Client) => [
    c.board.provider,
    ...[...c.cards.values()].map((d) => d.provider),
  ]

  /** The comments people wrote in this run: none may be lost, offline or across re-bases. */
  const written = new Set<string>()

  /** Replicas moving to a new generation (their edits carried across), under way. */
  const moving = new Set<Promise<void>>()

  /**
   * What the app does when the server refuses a copy as holding an ended generation
   * (client/src/live/org-live.ts): its unsent edits by key against the ended generation's
   * final state, then a fresh copy, and the edits made again there once it holds the new
   * generation. Nothing awaits between working the edits out and swapping the copies.
   */
  function carryAcross(c: Client, which: string): void {
    const name = which === 'board' ? boardDocName(owner.orgId) : cardDocName(owner.orgId, which)
    const replicaOf = () => (which === 'board' ? c.board : (c.cards.get(which) as Replica))
    const old = replicaOf()
    const job = (async () => {
      const ended = await owner.request<{ base: DocJson; stateVector: string }>(
        'GET',
        `/api/app/orgs/${owner.orgId}/documents/generations/${generationOf(old.doc)}?document=${encodeURIComponent(name)}`,
      )
      if (ended.status !== 200) throw new Error(`ended generation: ${ended.status}`)
      if (replicaOf() !== old) return
      const edits = editsToCarry(
        name,
        ended.body.base,
        Y.decodeStateVector(Buffer.from(ended.body.stateVector, 'base64')),
        old.doc,
      )
      // The server closed it: forgotten without telling it (see LiveDoc.destroy).
      c.socket.configuration.providerMap.delete(old.provider.effectiveName)
      old.provider.destroy()
      const fresh = attach(c.socket, name, c.token, () => carryAcross(c, which))
      if (which === 'board') c.board = fresh
      else c.cards.set(which, fresh)
      const generation = generationOf(old.doc) + 1
      // Whichever copy holds the document by then: re-based again meanwhile (compaction
      // may start one of its own), the fresh copy is replaced in its turn, and the edits
      // go with the copy that holds a generation at least this one.
      await eventually(
        () => (generationOf(replicaOf().doc) >= generation ? true : undefined),
        60_000,
      ).catch((error: unknown) => {
        const now = replicaOf()
        throw new Error(
          `${which} of a client never reached generation ${generation}: its copy is at ${generationOf(now.doc)} (${now === fresh ? 'the fresh one' : 'replaced'}), synced ${now.provider.synced}, socket ${c.socket.status}`,
          { cause: error },
        )
      })
      carry(replicaOf().doc, edits)
    })()
    moving.add(job)
    void job.finally(() => moving.delete(job)).catch(() => {})
  }

  /** Everyone online, every edit sent and answered, people's edits stored. */
  async function settle(): Promise<void> {
    for (const c of clients) await goOnline(c)
    // A copy closed as re-based while this waits is replaced by a fresh one at once, which
    // may be synced before the edits are carried onto it: done only when nothing is moving.
    do {
      while (moving.size > 0) await Promise.all(moving)
      await eventually(
        () =>
          moving.size === 0 &&
          clients.every((c) => providers(c).every((p) => p.synced && !p.hasUnsyncedChanges))
            ? true
            : undefined,
        20_000,
      ).catch((error: unknown) => {
        const stuck = clients.flatMap((c, i) =>
          providers(c)
            .filter((p) => !p.synced || p.hasUnsyncedChanges)
            .map(
              (p) =>
                `client ${i} ${p.configuration.name}: synced ${p.synced}, unsynced ${p.unsyncedChanges}`,
            ),
        )
        throw new Error(`not settled: ${stuck.join('; ')}`, { cause: error })
      })
    } while (moving.size > 0)
    await server.app.live.flushPeople(owner.orgId)
  }

  /** Each run starts from the same place: everyone online, every card on the board and free. */
  async function reset(): Promise<void> {
    await settle()
    for (const id of cards) {
      await agent.call('release_task', { taskId: id, agentName: 'Ada' })
      await owner.request('POST', `/api/app/orgs/${owner.orgId}/tasks/${id}/restore`)
    }
    await settle()
  }

  function apply(s: Step): Promise<unknown> | undefined {
    const taskId = cards['card' in s ? s.card : 0] as string
    if ('who' in s) {
      const c = clients[s.who] as Client
      const m = boardMaps(c.board.doc).tasks.get(taskId)
      const thread = cardMaps((c.cards.get(taskId) as { doc: Y.Doc }).doc).comments
      switch (s.kind) {
        case 'title':
          m?.set('title', s.text)
          return
        case 'move':
          m?.set('columnId', columns[s.column])
          return
        case 'describe':
          cardMaps((c.cards.get(taskId) as { doc: Y.Doc }).doc).description.insert(0, s.text)
          return
        case 'archive':
          m?.set('archivedAt', new Date().toISOString())
          return
        case 'comment': {
          const comment = new Y.Map<unknown>()
          comment.set('taskId', taskId)
          comment.set('body', s.body)
          const id = crypto.randomUUID()
          written.add(id)
          thread.set(id, comment)
          return
        }
        case 'editComment': {
          const mine = [...thread.entries()].find(
            ([, v]) => v.get('authorEmail') === owner.user?.email,
          )
          mine?.[1].set('body', s.body)
          return
        }
        case 'offline':
          return goOffline(c)
        case 'online':
          return goOnline(c)
        default:
          return s satisfies never
      }
    }
    switch (s.kind) {
      case 'agentMove':
        return agent.call('move_task', { taskId, columnId: columns[s.column] })
      case 'agentComment':
        return agent.call('add_comment', { taskId, body: 'an agent was here', agentName: 'Ada' })
      case 'agentClaim':
        return agent.call('claim_task', { taskId, agentName: 'Ada' })
      case 'agentRelease':
        return agent.call('release_task', { taskId, agentName: 'Ada' })
      case 'agentArchive':
        return agent.call('archive_task', { taskId, agentName: 'Ada' })
      case 'restore':
        return owner.request('POST', `/api/app/orgs/${owner.orgId}/tasks/${taskId}/restore`)
      case 'rebase':
        return server.app.live.rebase(
          s.target === 'board'
            ? boardDocName(owner.orgId)
            : cardDocName(owner.orgId, cards[s.target] as string),
        )
      default:
        return s satisfies never
    }
  }

  /** What a replica of the board shows, in a comparable form (replicas order keys differently). */
  const boardState = (doc: Y.Doc) =>
    canonical({
      tasks: boardMaps(doc).tasks.toJSON(),
      claims: boardMaps(doc).claims.toJSON(),
      columns: boardMaps(doc).columns.toJSON(),
    })
  const cardState = (doc: Y.Doc) =>
    canonical({
      comments: cardMaps(doc).comments.toJSON(),
      description: cardMaps(doc).description.toString(),
    })
  const descriptionOf = (taskId: string) =>
    server.app.live.read(cardDocName(owner.orgId, taskId), (doc) =>
      cardMaps(doc).description.toString(),
    )

  test('every replica converges, satisfies the schema and every lock, and Postgres agrees', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 20 }), async (steps) => {
        await reset()
        written.clear()
        // A claimed card, as the board showed it after its holder's last write: people's
        // edits must not move it while the claim lives (comments may).
        const heldSince = new Map<string, string>()
        const snapshot = async (taskId: string) => {
          const fields = await server.app.live.read(boardDocName(owner.orgId), (doc) => {
            const m = boardMaps(doc).tasks.get(taskId)
            return m ? lockedFields(readStoredTask(taskId, m)) : 'archived'
          })
          return fields === 'archived' ? fields : fields + (await descriptionOf(taskId))
        }
        for (const s of steps) {
          const done = await apply(s)
          if (!('card' in s) || 'who' in s) continue
          const taskId = cards[s.card] as string
          const ok = (done as { status?: number } | undefined)?.status === 200
          if (s.kind === 'agentClaim' && ok) heldSince.set(taskId, await snapshot(taskId))
          else if (s.kind === 'agentRelease' || s.kind === 'restore') heldSince.delete(taskId)
          else if (heldSince.has(taskId) && ok) heldSince.set(taskId, await snapshot(taskId))
        }
        await settle()

        // Converged: the server's documents, and every replica equal to them.
        const server_ = await server.app.live.read(boardDocName(owner.orgId), boardState)
        const threads = new Map<string, string>()
        for (const id of cards)
          threads.set(id, await server.app.live.read(cardDocName(owner.orgId, id), cardState))
        const converged = () =>
          clients.every(
            (c) =>
              boardState(c.board.doc) === server_ &&
              cards.every(
                (id) => cardState((c.cards.get(id) as { doc: Y.Doc }).doc) === threads.get(id),
              ),
          )
        await eventually(() => (converged() ? true : undefined), 10_000).catch(() => {
          expect(clients.map((c) => JSON.parse(boardState(c.board.doc)))).toEqual(
            clients.map(() => JSON.parse(server_)),
          )
          for (const id of cards) {
            expect(
              clients.map((c) => JSON.parse(cardState((c.cards.get(id) as { doc: Y.Doc }).doc))),
            ).toEqual(clients.map(() => JSON.parse(threads.get(id) as string)))
          }
        })

        // The schema and the locks.
        const descriptions = new Map<string, string>()
        for (const id of cards) descriptions.set(id, await descriptionOf(id))
        const problems = await server.app.live.read(boardDocName(owner.orgId), (doc) => {
          const out: string[] = []
          const maps = boardMaps(doc)
          maps.tasks.forEach((m, id) => {
            const t = readStoredTask(id, m)
            if (t.title.length < 1 || t.title.length > LIMITS.taskTitle.max)
              out.push(`title of ${id}`)
            if (!maps.columns.has(t.columnId)) out.push(`${id} in a missing column`)
            if (t.archivedAt !== null) out.push(`${id} archived but on the board`)
            const held = heldSince.get(id)
            if (
              held &&
              held !== 'archived' &&
              held !== lockedFields(t) + (descriptions.get(id) ?? '')
            )
              out.push(`claimed ${id} changed`)
          })
          maps.claims.forEach((_, id) => {
            if (!maps.tasks.has(id)) out.push(`claim entry of ${id} without its card`)
          })
          if (doc.getMap('comments').size > 0) out.push('comments on the board')
          return out
        })
        expect(problems).toEqual([])

        // Postgres agrees with the documents.
        const db = server.storage.db
        const kept = await db.query<{ id: string }>(
          'select id from comments where id = any($1::uuid[])',
          [[...written]],
        )
        expect(kept.length).toBe(written.size)
        const onBoard = await server.app.live.read(
          boardDocName(owner.orgId),
          (doc) =>
            new Map(
              cards.flatMap((id) => {
                const m = boardMaps(doc).tasks.get(id)
                return m ? [[id, asStats(m.get('stats'))] as const] : []
              }),
            ),
        )
        const archived = await db.query<{ id: string; record: { stats?: unknown } }>(
          'select id, record from archived_tasks where org_id = $1',
          [owner.orgId],
        )
        expect(new Set(archived.map((r) => r.id))).toEqual(
          new Set(cards.filter((id) => !onBoard.has(id))),
        )
        for (const id of cards) {
          const thread = await server.app.live.read(cardDocName(owner.orgId, id), (doc) => ({
            comments: [...cardMaps(doc).comments.entries()]
              .map(([cid, m]) => readComment(cid, m))
              .sort((a, b) => a.id.localeCompare(b.id)),
            stats: statsOf(doc),
          }))
          const rows = await db.query<{
            id: string
            body: string
            author_email: string
            created_at: Date
            edited_at: Date | null
          }>(
            'select id, body, author_email, created_at, edited_at from comments where task_id = $1 order by id',
            [id],
          )
          expect(
            rows.map((r) => ({
              id: r.id,
              body: r.body,
              authorEmail: r.author_email,
              createdAt: r.created_at.toISOString(),
              editedAt: r.edited_at?.toISOString() ?? null,
            })),
          ).toEqual(
            thread.comments.map((c) => ({
              id: c.id,
              body: c.body,
              authorEmail: c.authorEmail,
              createdAt: c.createdAt,
              editedAt: c.editedAt,
            })),
          )
          const stats = onBoard.get(id) ?? asStats(archived.find((r) => r.id === id)?.record.stats)
          expect(stats).toEqual(thread.stats)
          // The description Postgres keeps is the card document's (written by the server
          // in the transaction after people's edits reach it).
          await eventuallyAsync(async () => {
            const [row] = await db.query<{ description: string }>(
              'select description from task_texts where id = $1',
              [id],
            )
            return row?.description === descriptions.get(id) ? true : undefined
          }, 10_000)
        }
      }),
      { numRuns: 60 },
    )
  }, 600_000)
})

/** JSON with every object's keys sorted. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  )
}

/** A card's board fields a claim locks (everything people could change but its stats; its
 * description, in the card document, is locked too). */
function lockedFields(t: ReturnType<typeof readStoredTask>): string {
  return JSON.stringify({
    title: t.title,
    columnId: t.columnId,
    position: t.position,
    tags: t.tags,
    priority: t.priority,
    type: t.type,
    projectId: t.projectId,
  })
}
