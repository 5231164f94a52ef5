import { z } from 'zod'
import { badRequest, notFound } from '../../errors.ts'
import { answer } from '../../http/route-docs.ts'
import { type AppRouter, pathId, queryOf } from './route.ts'

/** A timeline page's size: default and most. */
const HISTORY_PAGE = { default: 50, max: 200 }

const actor = z.union([
  z.strictObject({ kind: z.literal('agent'), email: z.string(), name: z.string() }),
  z.strictObject({
    kind: z.literal('person'),
    email: z.string(),
    userId: z.string(),
    name: z.string().nullable(),
  }),
  z.strictObject({ kind: z.literal('server') }),
])
const historyEvent = z.strictObject({
  id: z.string().nullable(),
  kind: z.string(),
  at: z.string(),
  actor,
  detail: z.record(z.string(), z.unknown()),
})
const historyPage = z.strictObject({
  events: z.array(historyEvent),
  nextCursor: z.string().nullable(),
})
type HistoryEvent = z.infer<typeof historyEvent>

type HistoryRow = {
  id: string | number
  kind: string
  at: Date | string
  actor: Record<string, unknown>
  detail: Record<string, unknown>
}

/**
 * Each card's history (issue 32): what happened to it, newest first, a page at a time, from
 * card_history's (org, card, id desc) index. A claim whose lease ran out with no write
 * since shows as lapsed at the top of the first page, as of now.
 */
export function cardHistoryRoutes(app: AppRouter): void {
  const { db } = app.deps

  app.org(
    'GET',
    '/cards/:taskId/history',
    {
      summary: "A card's history, newest first, a page at a time",
      description:
        'One event per change: created, moved (from → to), changed (field, old → new), described, claimed, released, force-released, lapsed, heartbeat-gap, archived, restored, commented, screenshot; each with who made it (an agent by its board label, a person by name, or the server) and when.',
      access: 'member',
      query: {
        limit: {
          description: 'Events per page.',
          schema: {
            type: 'integer',
            minimum: 1,
            maximum: HISTORY_PAGE.max,
            default: HISTORY_PAGE.default,
          },
        },
        cursor: {
          description: "The previous page's nextCursor.",
          schema: { type: 'string' },
        },
      },
      answers: [answer.json(200, 'nextCursor is null after the last page.', historyPage)],
      errors: {
        400: `taskId is not a UUID, limit is not an integer from 1 to ${HISTORY_PAGE.max}, or cursor is not a nextCursor.`,
        404: 'No card of this organisation has that id (on the board or archived).',
      },
    },
    async (req, { user, org, params }) => {
      const taskId = pathId(params, 'taskId')
      const query = queryOf(req)
      const limit = pageLimit(query.get('limit'))
      const cursor = pageCursor(query.get('cursor'))
      const [claim, stored] = await Promise.all([
        app
          .context({ user, org })
          .readBoard((view) =>
            view.hasTask(taskId) ? { claim: view.claimOf(taskId) } : undefined,
          ),
        db.query<{ n: number }>('select 1 as n from task_texts where org_id = $1 and id = $2', [
          org.id,
          taskId,
        ]),
      ])
      if (!claim && stored.length === 0 && !app.deps.live.pendingArchived(org.id).has(taskId)) {
        throw notFound(`No card with taskId ${taskId} in this organisation`)
      }
      const rows = await db.query<HistoryRow>(
        `select id, kind, at, actor, detail from card_history
          where org_id = $1 and task_id = $2 and ($3::bigint is null or id < $3::bigint)
          order by id desc limit $4`,
        [org.id, taskId, cursor ?? null, limit + 1],
      )
      const shown = rows.slice(0, limit)
      const names = await personNames(
        db,
        shown.flatMap((r) =>
          r.actor.kind === 'person' && typeof r.actor.userId === 'string' ? [r.actor.userId] : [],
        ),
      )
      const events: HistoryEvent[] = shown.map((r) => ({
        id: String(r.id),
        kind: r.kind,
        at: new Date(r.at).toISOString(),
        actor: (r.actor.kind === 'person'
          ? { ...r.actor, name: names.get(String(r.actor.userId)) ?? null }
          : r.actor) as HistoryEvent['actor'],
        detail: r.detail,
      }))
      // A lease that ran out is no write: shown as of now, above the first page.
      const lapsed = claim?.claim
      if (cursor === undefined && lapsed && lapsed.status === 'lapsed') {
        events.unshift({
          id: null,
          kind: 'lapsed',
          at: lapsed.expiresAt,
          actor: { kind: 'server' },
          detail: {
            holder: lapsed.holder,
            expiredAt: lapsed.expiresAt,
            startedAt: lapsed.startedAt,
          },
        })
      }
      const last = shown.at(-1)
      const nextCursor = rows.length > limit && last ? String(last.id) : null
      return { status: 200, body: { events, nextCursor } }
    },
  )
}

async function personNames(
  db: AppRouter['deps']['db'],
  ids: string[],
): Promise<Map<string, string>> {
  const unique = [...new Set(ids)]
  if (unique.length === 0) return new Map()
  const rows = await db.query<{ id: string; name: string }>(
    'select id, name from users where id = any($1::uuid[])',
    [unique],
  )
  return new Map(rows.map((r) => [r.id, r.name]))
}

function pageLimit(raw: string | null): number {
  if (raw === null || raw === '') return HISTORY_PAGE.default
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 1 || n > HISTORY_PAGE.max) {
    throw badRequest(`limit must be an integer from 1 to ${HISTORY_PAGE.max}`)
  }
  return n
}

function pageCursor(raw: string | null): string | undefined {
  if (raw === null || raw === '') return undefined
  if (!/^[1-9][0-9]{0,17}$/.test(raw)) {
    throw badRequest('cursor must be the nextCursor of a previous page')
  }
  return raw
}
