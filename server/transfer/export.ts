import { createHash } from 'node:crypto'
import type { Db } from '../../persistence/types.ts'
import {
  BOARD_ENTRY,
  FORMAT,
  FORMAT_VERSION,
  type Kind,
  MANIFEST_ENTRY,
  type Manifest,
  ORG_ENTRY,
  type OrgEntry,
  PART_BYTES,
  partName,
  tsSql,
  tsText,
} from './format.ts'
import { TAR_END, tarHeader, tarPadding } from './tar.ts'

/**
 * Writes an organisation out as the export archive (format.ts, docs/export.md), as an
 * uncompressed tar stream the caller gzips. Read page by page (keyset pages of Postgres
 * rows, one card page's comments at a time, a few stored files at a time): memory follows
 * a page, never the organisation.
 */
export interface ExportDeps {
  db: Db
  live: ExportLive
}

/** What an export reads of the live documents (live-reads.ts; from a transfer thread, by asking). */
export interface ExportLive {
  /** Stores people's edits batched in memory: the export reads storage. */
  flushPeople(orgId: string): Promise<void>
  board(orgId: string): Promise<BoardJson>
  map(orgId: string, mapId: string): Promise<MapJson>
}

type Json = Record<string, unknown>

/** The board document as the export writes it: `generation` left out of its meta. */
export interface BoardJson {
  meta: Json
  claims: Json
  columns: ({ id: string } & Json)[]
  projects: ({ id: string } & Json)[]
  tasks: ({ id: string } & Json)[]
}

export interface MapJson {
  meta: Json
  nodes: ({ id: string } & Json)[]
  edges: ({ id: string } & Json)[]
}

/** Below every id: where keyset pages start. */
const NONE = '00000000-0000-0000-0000-000000000000'
const CARD_PAGE = 200
const ROW_PAGE = 1000
const MAP_PAGE = 50
/** Stored files read per query (their bytes included). */
const FILE_PAGE = 4

class Writer {
  readonly entries: Manifest['entries'] = []
  readonly counts: Record<string, number> = {}
  private readonly mtime: Date

  constructor(mtime: Date) {
    this.mtime = mtime
  }

  count(what: string, n = 1): void {
    this.counts[what] = (this.counts[what] ?? 0) + n
  }

  /** One whole entry: header, bytes, padding. */
  *entry(name: string, bytes: Buffer): Generator<Buffer> {
    this.entries.push({
      name,
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    })
    yield tarHeader(name, bytes.length, this.mtime)
    if (bytes.length > 0) yield bytes
    const pad = tarPadding(bytes.length)
    if (pad.length > 0) yield pad
  }
}

/** JSON Lines of one kind, cut into parts. */
class Parts {
  private lines: Buffer[] = []
  private bytes = 0
  private index = 0
  private readonly writer: Writer
  private readonly kind: Kind

  constructor(writer: Writer, kind: Kind) {
    this.writer = writer
    this.kind = kind
  }

  *add(record: unknown): Generator<Buffer> {
    const line = Buffer.from(`${JSON.stringify(record)}\n`, 'utf8')
    this.lines.push(line)
    this.bytes += line.length
    if (this.bytes >= PART_BYTES) yield* this.flush()
  }

  *flush(): Generator<Buffer> {
    if (this.lines.length === 0) return
    this.index += 1
    const body = Buffer.concat(this.lines)
    this.lines = []
    this.bytes = 0
    yield* this.writer.entry(partName(this.kind, this.index), body)
  }
}

interface CommentRow {
  id: string
  task_id: string
  body: string
  author_email: string
  agent_name: string | null
  created_at: string
  edited_at: string | null
}

interface AttachmentRow {
  id: string
  task_id: string
  filename: string
  mime_type: string
  size: number
  created_at: string
}

/** Each card's comments (oldest first) and screenshots, for a page of cards. */
async function threadsOf(
  db: Db,
  orgId: string,
  ids: string[],
): Promise<Map<string, { comments: Json[]; attachments: Json[] }>> {
  const out = new Map<string, { comments: Json[]; attachments: Json[] }>()
  for (const id of ids) out.set(id, { comments: [], attachments: [] })
  if (ids.length === 0) return out
  const [comments, attachments] = await Promise.all([
    db.query<CommentRow & Json>(
      `select id, task_id, body, author_email, agent_name, ${tsSql('created_at')} as created_at,
              ${tsSql('edited_at')} as edited_at
         from comments where org_id = $1 and task_id = any($2::uuid[])
        order by task_id, created_at, id`,
      [orgId, ids],
    ),
    db.query<AttachmentRow & Json>(
      `select id, task_id, filename, mime_type, size, ${tsSql('created_at')} as created_at
         from attachments where org_id = $1 and task_id = any($2::uuid[])
        order by task_id, created_at, id`,
      [orgId, ids],
    ),
  ])
  for (const c of comments) {
    out.get(c.task_id)?.comments.push({
      id: c.id,
      body: c.body,
      authorEmail: c.author_email,
      agentName: c.agent_name,
      createdAt: tsText(c.created_at),
      editedAt: tsText(c.edited_at),
    })
  }
  for (const a of attachments) {
    out.get(a.task_id)?.attachments.push({
      id: a.id,
      filename: a.filename,
      mimeType: a.mime_type,
      size: a.size,
      createdAt: tsText(a.created_at),
    })
  }
  return out
}

/**
 * The archive of one organisation, as tar bytes. `exportedAt` is the only value an
 * export of unchanged data does not repeat.
 */
export async function* exportOrganization(
  deps: ExportDeps,
  orgId: string,
  now: Date,
): AsyncGenerator<Buffer> {
  const { db, live } = deps
  const w = new Writer(now)
  const exportedAt = now.toISOString()
  // People's edits batched in memory go to storage first: the export reads storage.
  await live.flushPeople(orgId)

  const [org] = await db.query<{ id: string; name: string; created_at: string }>(
    `select id, name, ${tsSql('created_at')} as created_at from organizations where id = $1`,
    [orgId],
  )
  if (!org) throw new Error(`organisation ${orgId} not found`)
  const orgEntry: OrgEntry = {
    format: FORMAT,
    version: FORMAT_VERSION,
    id: org.id,
    name: org.name,
    createdAt: tsText(org.created_at) as string,
    exportedAt,
  }
  yield* w.entry(ORG_ENTRY, Buffer.from(`${JSON.stringify(orgEntry, null, 2)}\n`))

  // Members and their roles (no password, no session).
  const members = new Parts(w, 'members')
  const memberRows = await db.query<Json>(
    `select u.id as "userId", u.email, u.name, m.role, ${tsSql('m.created_at')} as "joinedAt"
       from memberships m join users u on u.id = m.user_id
      where m.org_id = $1 order by m.created_at, u.id`,
    [orgId],
  )
  for (const m of memberRows) {
    w.count('members')
    yield* members.add({ ...m, joinedAt: tsText(m.joinedAt as string) })
  }
  yield* members.flush()

  // API keys (no key, no hash): their robot accounts are who their writes name.
  const keys = new Parts(w, 'api-keys')
  const keyRows = await db.query<Json>(
    `select k.id, k.name, k.prefix, k.robot_user_id as "robotUserId", r.email as "robotEmail",
            r.name as "robotName", c.email as "createdByEmail",
            ${tsSql('k.created_at')} as "createdAt", ${tsSql('k.revoked_at')} as "revokedAt",
            ${tsSql('k.last_used_at')} as "lastUsedAt"
       from api_keys k join users r on r.id = k.robot_user_id join users c on c.id = k.created_by
      where k.org_id = $1 order by k.created_at, k.id`,
    [orgId],
  )
  for (const k of keyRows) {
    w.count('apiKeys')
    yield* keys.add({
      ...k,
      createdAt: tsText(k.createdAt as string),
      revokedAt: tsText(k.revokedAt as string | null),
      lastUsedAt: tsText(k.lastUsedAt as string | null),
    })
  }
  yield* keys.flush()

  // The board document: its columns, projects, cards and claim projections.
  const board = await live.board(orgId)
  yield* w.entry(
    BOARD_ENTRY,
    Buffer.from(`${JSON.stringify({ meta: board.meta, claims: board.claims }, null, 2)}\n`),
  )
  const columns = new Parts(w, 'columns')
  for (const c of board.columns) {
    w.count('columns')
    yield* columns.add(c)
  }
  yield* columns.flush()
  const projects = new Parts(w, 'projects')
  for (const p of board.projects) {
    w.count('projects')
    yield* projects.add(p)
  }
  yield* projects.flush()

  // Cards on the board, each with its description, comments and screenshots.
  const cards = new Parts(w, 'cards')
  for (let i = 0; i < board.tasks.length; i += CARD_PAGE) {
    const page = board.tasks.slice(i, i + CARD_PAGE)
    const ids = page.map((t) => t.id)
    const [texts, threads] = await Promise.all([
      db.query<{ id: string; title: string; description: string }>(
        'select id, title, description from task_texts where org_id = $1 and id = any($2::uuid[])',
        [orgId, ids],
      ),
      threadsOf(db, orgId, ids),
    ])
    const text = new Map(texts.map((t) => [t.id, t]))
    for (const { id, ...fields } of page) {
      const thread = threads.get(id)
      w.count('cards')
      w.count('comments', thread?.comments.length ?? 0)
      w.count('attachments', thread?.attachments.length ?? 0)
      yield* cards.add({
        id,
        card: fields,
        title: text.get(id)?.title ?? null,
        description: text.get(id)?.description ?? '',
        comments: thread?.comments ?? [],
        attachments: thread?.attachments ?? [],
      })
    }
  }
  yield* cards.flush()
  board.tasks.length = 0

  // Archived cards: their records, descriptions, comments and screenshots.
  const archived = new Parts(w, 'archived')
  for (let after = NONE; ; ) {
    const rows = await db.query<{
      id: string
      column_id: string
      archived_at: string
      record: Json
      title: string | null
      description: string | null
    }>(
      `select a.id, a.column_id, ${tsSql('a.archived_at')} as archived_at, a.record,
              t.title, t.description
         from archived_tasks a left join task_texts t on t.id = a.id
        where a.org_id = $1 and a.id > $2::uuid
        order by a.id limit ${CARD_PAGE}`,
      [orgId, after],
    )
    if (rows.length === 0) break
    const threads = await threadsOf(
      db,
      orgId,
      rows.map((r) => r.id),
    )
    for (const r of rows) {
      const thread = threads.get(r.id)
      w.count('archived')
      w.count('comments', thread?.comments.length ?? 0)
      w.count('attachments', thread?.attachments.length ?? 0)
      yield* archived.add({
        id: r.id,
        columnId: r.column_id,
        archivedAt: tsText(r.archived_at),
        record: r.record,
        title: r.title,
        description: r.description ?? '',
        comments: thread?.comments ?? [],
        attachments: thread?.attachments ?? [],
      })
    }
    after = (rows.at(-1) as { id: string }).id
  }
  yield* archived.flush()

  // Claim records: what `activity` shows.
  const claims = new Parts(w, 'claims')
  for (let after = NONE; ; ) {
    const rows = await db.query<Json & { taskId: string }>(
      `select task_id as "taskId", key_id as "keyId", agent_name as "agentName", house,
              generation, is_sub_child as "isSubChild", note,
              ${tsSql('started_at')} as "startedAt", ${tsSql('updated_at')} as "updatedAt",
              ${tsSql('expires_at')} as "expiresAt", ${tsSql('released_at')} as "releasedAt"
         from claims where org_id = $1 and task_id > $2::uuid
        order by task_id limit ${ROW_PAGE}`,
      [orgId, after],
    )
    if (rows.length === 0) break
    for (const r of rows) {
      w.count('claims')
      for (const k of ['startedAt', 'updatedAt', 'expiresAt', 'releasedAt']) {
        r[k] = tsText(r[k] as string | null)
      }
      yield* claims.add(r)
    }
    after = (rows.at(-1) as { taskId: string }).taskId
  }
  yield* claims.flush()

  // Mind maps: each with its nodes, edges and item index (deleted ones keep their row).
  const maps = new Parts(w, 'maps')
  for (let after = NONE; ; ) {
    const rows = await db.query<{
      id: string
      title: string
      created_at: string
      updated_at: string
      deleted_at: string | null
    }>(
      `select id, title, ${tsSql('created_at')} as created_at, ${tsSql('updated_at')} as updated_at,
              ${tsSql('deleted_at')} as deleted_at
         from maps where org_id = $1 and id > $2::uuid order by id limit ${MAP_PAGE}`,
      [orgId, after],
    )
    if (rows.length === 0) break
    const items = await db.query<{ id: string; map_id: string; kind: string }>(
      'select id, map_id, kind from map_items where map_id = any($1::uuid[]) order by map_id, id',
      [rows.map((r) => r.id)],
    )
    for (const r of rows) {
      const doc =
        r.deleted_at === null ? await live.map(orgId, r.id) : { meta: {}, nodes: [], edges: [] }
      w.count('maps')
      w.count('nodes', doc.nodes.length)
      w.count('edges', doc.edges.length)
      yield* maps.add({
        id: r.id,
        title: r.title,
        createdAt: tsText(r.created_at),
        updatedAt: tsText(r.updated_at),
        deletedAt: tsText(r.deleted_at),
        meta: doc.meta,
        nodes: doc.nodes,
        edges: doc.edges,
        items: items.filter((i) => i.map_id === r.id).map((i) => ({ id: i.id, kind: i.kind })),
      })
    }
    after = (rows.at(-1) as { id: string }).id
  }
  yield* maps.flush()

  // Webhooks, without their secrets.
  const hooks = new Parts(w, 'webhooks')
  const hookRows = await db.query<Json>(
    `select h.id, h.url, h.events, h.enabled, h.disabled_reason as "disabledReason",
            ${tsSql('h.disabled_at')} as "disabledAt",
            h.consecutive_failures as "consecutiveFailures", u.email as "createdByEmail",
            ${tsSql('h.created_at')} as "createdAt"
       from webhooks h left join users u on u.id = h.created_by
      where h.org_id = $1 order by h.created_at, h.id`,
    [orgId],
  )
  for (const h of hookRows) {
    w.count('webhooks')
    yield* hooks.add({
      ...h,
      disabledAt: tsText(h.disabledAt as string | null),
      createdAt: tsText(h.createdAt as string),
    })
  }
  yield* hooks.flush()

  // Stored files: their records, then their bytes, a few at a time.
  const records = new Parts(w, 'file-records')
  for (let after = NONE; ; ) {
    const rows = await db.query<Json & { id: string }>(
      `select id, visibility, mime_type as "mimeType", extension, size, sha256,
              ${tsSql('created_at')} as "createdAt"
         from files where org_id = $1 and id > $2::uuid order by id limit ${ROW_PAGE}`,
      [orgId, after],
    )
    if (rows.length === 0) break
    for (const r of rows) {
      w.count('files')
      w.count('fileBytes', r.size as number)
      yield* records.add({ ...r, createdAt: tsText(r.createdAt as string) })
    }
    after = (rows.at(-1) as { id: string }).id
  }
  yield* records.flush()
  for (let after = NONE; ; ) {
    // As base64, a third more than the bytes, where the driver's hex is twice as many;
    // encoded outside the page's query, or a plan that sorts would encode every file.
    const rows = await db.query<{ id: string; extension: string; data: string }>(
      `select id, extension, encode(data, 'base64') as data
         from (select id, extension, data from files
                where org_id = $1 and id > $2::uuid order by id limit ${FILE_PAGE}) page
        order by id`,
      [orgId, after],
    )
    if (rows.length === 0) break
    for (const r of rows) {
      yield* w.entry(`files/${r.id}.${r.extension}`, Buffer.from(r.data, 'base64'))
    }
    after = (rows.at(-1) as { id: string }).id
  }

  const manifest: Manifest = {
    format: FORMAT,
    version: FORMAT_VERSION,
    orgId,
    exportedAt,
    counts: w.counts,
    entries: w.entries,
  }
  const body = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`)
  yield tarHeader(MANIFEST_ENTRY, body.length, now)
  yield body
  yield tarPadding(body.length)
  yield TAR_END
}
