import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import { archive, firstDescription } from '../../server/actions/tasks.ts'
import type { App } from '../../server/app.ts'
import { followStats, openCard } from '../../server/board/card-thread.ts'
import { textOps } from '../../server/board/texts.ts'
import { storedClaimFromRow } from '../../server/claims/locks.ts'
import { acquireClaim, releaseClaim } from '../../server/claims/store.ts'
import type { WriteOrigin } from '../../server/live/origins.ts'
import { boardMaps, readStoredTask, taskMap } from '../../shared/board-doc.ts'
import { cardMaps, readComment } from '../../shared/card-doc.ts'
import { boardDocName, cardDocName } from '../../shared/doc-names.ts'
import { EMPTY_STATS } from '../../shared/records.ts'
import { Person } from '../support/client.ts'

/**
 * Writes an organisation's board and history the way a year of real use makes them, in
 * bulk but through the code paths the actions use (the one write path, the card
 * documents, the claim store, archive): cards are created on the board, commented, some
 * claimed and released, then archived, each step its own write, so the board document
 * carries exactly the tombstones real use leaves. A batch of cards moves through every
 * step together, which is what makes 200,000 records take minutes instead of hours.
 */
export interface OrgShape {
  /** Cards left on the board. */
  onBoard: number
  /** Comments on each card left on the board. */
  commentsOnBoard: number
  /** Cards created, commented, maybe claimed and released, then archived. */
  archived: number
  commentsPerArchived: number
  /** How many of the archived cards were claimed and released before archiving. */
  claimedArchived: number
  /** Characters of each card's description (what agents write: plans, specs, logs); none if unset. */
  descriptionChars?: number
}

export interface SeededOrg {
  orgId: string
  /** The person who signed the organisation up (its owner), for the app's routes. */
  owner: Person
  key: string
  onBoard: string[]
  archived: string[]
}

const BATCH = 250
const words =
  'the agent found a flaky test in the login flow and fixed the retry with a clear note'.split(' ')
const sentence = (n: number, seed: number) =>
  Array.from({ length: n }, (_, i) => words[(seed + i * 7) % words.length]).join(' ')

/** A description of about `chars` characters, in paragraphs and a list, as agents write them. */
function describe(chars: number, seed: number): string {
  let out = `## Plan for card ${seed}\n\n`
  for (let p = 0; out.length < chars; p++) {
    out += p % 3 === 2 ? `- ${sentence(8, seed + p)}\n` : `${sentence(24, seed + p)}.\n\n`
  }
  return out.slice(0, chars)
}

export async function seedOrg(
  app: App,
  url: string,
  shape: OrgShape,
  progress: (done: number, total: number) => void = () => {},
): Promise<SeededOrg> {
  const owner = new Person(url)
  await owner.signUp()
  const key = await owner.createKey('bench')
  const [row] = await app.db.query<{ id: string; robot_email: string }>(
    `select k.id, u.email as robot_email from api_keys k join users u on u.id = k.robot_user_id
      where k.org_id = $1`,
    [owner.orgId],
  )
  if (!row) throw new Error('no key')
  const orgId = owner.orgId
  const origin: WriteOrigin = {
    type: 'agent',
    orgId,
    keyId: row.id,
    email: row.robot_email,
    identity: { agentName: 'Seeder' },
  }
  const board = boardDocName(orgId)
  const columns = await app.live.read(board, (doc) => [...boardMaps(doc).columns.keys()].sort())
  const total = shape.archived + shape.onBoard
  let done = 0
  const onBoard: string[] = []
  const archived: string[] = []
  let claimedSoFar = 0
  for (let start = 0; start < total; start += BATCH) {
    // Archived cards first, in batches that never straddle the board's.
    const size = Math.min(BATCH, (start < shape.archived ? shape.archived : total) - start)
    const ids = Array.from({ length: size }, () => randomUUID())
    const toArchive = start < shape.archived
    // 1. Created on the board, each with its description in its own document.
    await app.live.write(board, origin, async (w) => {
      if (shape.descriptionChars) {
        for (const [i, id] of ids.entries()) {
          const text = describe(shape.descriptionChars, start + i)
          w.append(cardDocName(orgId, id), firstDescription(text))
          app.descriptions.set(orgId, id, text)
        }
      }
      w.mutate((doc) => {
        ids.forEach((id, i) => {
          const n = start + i
          boardMaps(doc).tasks.set(
            id,
            taskMap({
              columnId: columns[n % columns.length] as string,
              projectId: null,
              title: `Card ${n}: ${sentence(6, n)}`,
              type: 'feature',
              priority: n % 3 === 0 ? 'high' : null,
              tags: n % 5 === 0 ? ['backend'] : [],
              blockedBy: [],
              assigneeIds: [],
              position: 1024 * (n + 1),
              createdAt: w.now,
              updatedAt: w.now,
              archivedAt: null,
              createdByEmail: origin.email,
              stats: EMPTY_STATS,
            }),
          )
        })
      })
      for (const id of ids) w.changed('task', id)
      // Their words for search, as every board write of the service records them.
      for (const op of textOps(w.doc, ids)) w.row(op)
    })
    // 2. Commented, each comment moving the card's stats.
    const perCard = toArchive ? shape.commentsPerArchived : shape.commentsOnBoard
    if (perCard > 0) {
      await app.live.write(
        board,
        origin,
        async (w) => {
          for (const [i, id] of ids.entries()) {
            const card = await openCard(w, orgId, id)
            for (let c = 0; c < perCard; c++) {
              const commentId = randomUUID()
              const comment = w.mutateDoc(card.doc, (doc) => {
                const m = new Y.Map<unknown>()
                m.set('taskId', id)
                m.set('body', sentence(25, i + c))
                m.set('authorEmail', origin.email)
                m.set('agentName', c % 2 === 0 ? 'Seeder' : null)
                m.set('createdAt', new Date(Date.now() + c).toISOString())
                m.set('editedAt', null)
                cardMaps(doc).comments.set(commentId, m)
                return readComment(commentId, m)
              })
              followStats(w, id, card)
              w.row({ t: 'comment', id: commentId, rec: comment })
              w.changed('comment', commentId)
            }
          }
        },
        ids.map((id) => cardDocName(orgId, id)),
      )
    }
    // 3. Some claimed, then released (two writes: a claim is held for a while).
    const claimed = toArchive
      ? ids.slice(0, Math.max(0, Math.min(size, shape.claimedArchived - claimedSoFar)))
      : []
    claimedSoFar += claimed.length
    for (const step of [acquireClaim, releaseClaim] as const) {
      if (claimed.length === 0) break
      await app.live.write(board, origin, async (w) => {
        const now = Date.now()
        for (const taskId of claimed) {
          const claim = await step(w.tx, {
            orgId,
            taskId,
            actor: { keyId: origin.keyId, identity: origin.identity },
            now,
            leaseMs: 900_000,
          })
          if (!claim) continue
          w.mutate((doc) => boardMaps(doc).claims.set(taskId, storedClaimFromRow(claim, now)))
          w.changed('claim', taskId)
        }
      })
    }
    // 4. Archived: the card leaves the board, its claim entry with it.
    if (toArchive) {
      await app.live.write(board, origin, async (w) => {
        for (const id of ids) {
          const m = boardMaps(w.doc).tasks.get(id)
          if (m) archive(w, { ...readStoredTask(id, m), archivedAt: w.now, updatedAt: w.now })
        }
      })
      archived.push(...ids)
    } else onBoard.push(...ids)
    done += size
    progress(done, total)
  }
  return { orgId, owner, key, onBoard, archived }
}

/**
 * What autovacuum does over the year a seed compresses into minutes: dead row versions
 * cleared and the planner's statistics taken, so reads are measured on the database as it
 * would be, not on one that has not had its first autovacuum pass yet.
 */
export async function settle(app: App): Promise<void> {
  await app.db.query('vacuum analyze')
}
