import { createHash, randomUUID } from 'node:crypto'
import { pipeline, Readable } from 'node:stream'
import { createGunzip } from 'node:zlib'
import * as Y from 'yjs'
import { z } from 'zod'
import type { Db, Queryable } from '../../persistence/types.ts'
import { boardDocName, boardMaps, cardDocName, mapDocName } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { mapDocMaps } from '../../shared/map-doc.ts'
import { docJson } from '../../shared/rebase.ts'
import { createInvite } from '../auth/accounts.ts'
import { ApiError, conflict } from '../errors.ts'
import { LEVEL, loadInto } from '../live/doc-store.ts'
import { endGeneration, storedGeneration } from '../live/generations.ts'
import type { LiveDocs } from '../live/live-docs.ts'
import { newWebhookSecret } from '../webhooks/signature.ts'
import {
  FORMAT,
  FORMAT_VERSION,
  KINDS,
  type Kind,
  MANIFEST_ENTRY,
  MAX_ENTRY_BYTES,
  ORG_ENTRY,
  parseEntryName,
} from './format.ts'
import { badArchive, readTar } from './tar.ts'

/**
 * Imports an export archive (format.ts, docs/export.md) into an empty organisation, in one
 * transaction: every entry is checked against its SHA-256 in the manifest (which comes
 * last), and anything wrong (a damaged, truncated or altered archive, a malformed record,
 * an id already in use on this server) rolls everything back. Ids, timestamps and order are
 * kept; the organisation's board document starts over as a new generation holding the
 * archive's board, so every open copy (the app, on any process) is replaced.
 */
export interface ImportDeps {
  db: Db
  live: LiveDocs
  /**
   * Where the archive is read and written when not on this thread (threads.ts: on
   * Postgres, a worker thread over a connection of its own); unset, importInto runs here.
   */
  thread?: ImportThread | undefined
}

/** Runs importInto elsewhere: same arguments, same answer, same errors. */
export interface ImportThread {
  run(
    target: ImportTarget,
    body: AsyncIterable<Buffer> | Iterable<Buffer>,
    options: ImportOptions,
  ): Promise<ImportReport>
}

export interface ImportOptions {
  dryRun: boolean
  maxBytes: number
}

export interface ImportTarget {
  orgId: string
  /** Who imports: the creator of keys and webhooks whose creator has no account here. */
  userId: string
}

/** What an import created (or, in a preview, would create), and what it could not keep. */
export interface ImportReport {
  dryRun: boolean
  source: { orgId: string; name: string; exportedAt: string }
  counts: Record<string, number>
  /**
   * The archive's members who are not members here, each invited with their role (an owner
   * as an admin: an invite makes no owners): the token, shown once, makes the link to send
   * them. A preview lists them with a null token.
   */
  invites: {
    email: string
    role: 'admin' | 'member'
    token: string | null
    expiresAt: string | null
  }[]
  /** What the archive holds that this server does not take as it was, in words. */
  notes: string[]
}

const uuid = z.uuid()
const ts = z.iso.datetime({ offset: true })
const tsOrNull = ts.nullable()

const orgEntry = z.object({
  format: z.literal(FORMAT),
  version: z.number().int(),
  id: uuid,
  name: z.string(),
  createdAt: ts,
  exportedAt: ts,
})

const member = z.object({
  userId: uuid,
  email: z.string(),
  name: z.string(),
  role: z.enum(['owner', 'admin', 'member']),
  joinedAt: ts,
})

const apiKey = z.object({
  id: uuid,
  name: z.string(),
  prefix: z.string(),
  robotUserId: uuid,
  robotEmail: z.string().min(3),
  robotName: z.string(),
  createdByEmail: z.string(),
  createdAt: ts,
  revokedAt: tsOrNull,
  lastUsedAt: tsOrNull,
})

const entryFields = z.record(z.string(), z.unknown())
const entry = z.looseObject({ id: uuid })

const comment = z.object({
  id: uuid,
  body: z.string(),
  authorEmail: z.string(),
  agentName: z.string().nullable(),
  createdAt: ts,
  editedAt: tsOrNull,
})

const attachment = z.object({
  id: uuid,
  filename: z.string(),
  mimeType: z.string(),
  size: z.number().int().nonnegative(),
  createdAt: ts,
})

const thread = {
  title: z.string().nullable(),
  description: z.string().max(20_000),
  comments: z.array(comment),
  attachments: z.array(attachment),
}

const card = z.object({ id: uuid, card: entryFields, ...thread })

const archivedCard = z.object({
  id: uuid,
  columnId: uuid,
  archivedAt: ts,
  record: entryFields,
  ...thread,
})

const claim = z.object({
  taskId: uuid,
  keyId: uuid,
  agentName: z.string().nullable(),
  house: z.string().nullable(),
  generation: z.number().int().nullable(),
  isSubChild: z.boolean(),
  note: z.string().nullable(),
  startedAt: ts,
  updatedAt: ts,
  expiresAt: ts,
  releasedAt: tsOrNull,
})

const mindMap = z.object({
  id: uuid,
  title: z.string(),
  createdAt: ts,
  updatedAt: ts,
  deletedAt: tsOrNull,
  meta: entryFields,
  nodes: z.array(entry),
  edges: z.array(entry),
  items: z.array(z.object({ id: uuid, kind: z.enum(['node', 'edge']) })),
})

const webhook = z.object({
  id: uuid,
  url: z.string(),
  events: z.array(z.string()),
  enabled: z.boolean(),
  disabledReason: z.string().nullable(),
  disabledAt: tsOrNull,
  consecutiveFailures: z.number().int().nonnegative(),
  createdByEmail: z.string().nullable(),
  createdAt: ts,
})

const fileRecord = z.object({
  id: uuid,
  visibility: z.enum(['public', 'private']),
  mimeType: z.string(),
  extension: z.string().regex(/^[a-z0-9]{1,10}$/),
  size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: ts,
})

const board = z.object({ meta: entryFields, claims: entryFields })

const manifest = z.object({
  format: z.literal(FORMAT),
  version: z.number().int(),
  orgId: uuid,
  exportedAt: ts,
  counts: z.record(z.string(), z.number().int().nonnegative()),
  entries: z.array(z.object({ name: z.string(), size: z.number().int(), sha256: z.string() })),
})

/** A record checked with its kind's schema: a 400 naming the entry, line and field. */
function parsed<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value)
  if (result.success) return result.data
  const issue = result.error.issues[0]
  const path = issue?.path.length ? issue.path.join('.') : 'the record'
  throw badArchive(`${where}: ${path}: ${issue?.message ?? 'malformed'}`)
}

function jsonOf(bytes: Buffer, where: string): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'))
  } catch {
    throw badArchive(`${where} is not JSON`)
  }
}

/** The request body, its size capped, gunzipped (capped again: a small bomb stays small). */
function unpacked(
  body: AsyncIterable<Buffer> | Iterable<Buffer>,
  maxBytes: number,
): AsyncIterable<Buffer> {
  let read = 0
  async function* capped() {
    for await (const chunk of body) {
      read += chunk.length
      if (read > maxBytes) {
        throw new ApiError(
          413,
          `The archive is larger than this server takes (IMPORT_MAX_BYTES, ${maxBytes} bytes)`,
        )
      }
      yield chunk
    }
  }
  const gunzip = createGunzip()
  let unpackedBytes = 0
  const limit = maxBytes * 16
  pipeline(
    Readable.from(capped(), { objectMode: false, highWaterMark: 64 * 1024 }),
    gunzip,
    () => {},
  )
  return (async function* () {
    try {
      for await (const chunk of gunzip as AsyncIterable<Buffer>) {
        unpackedBytes += chunk.length
        if (unpackedBytes > limit) {
          throw new ApiError(413, `The archive unpacks to more than ${limit} bytes`)
        }
        yield chunk
      }
    } catch (error) {
      if (error instanceof ApiError) throw error
      const code = (error as { code?: string }).code ?? ''
      if (code.startsWith('Z_'))
        throw badArchive(`it is not gzip, or its gzip is damaged (${code})`)
      throw error
    }
  })()
}

/** Cards whose rows and documents are written together. */
const BATCH_CARDS = 250

/** Rows for one statement each, written per batch of cards. */
interface Batch {
  texts: unknown[]
  comments: unknown[]
  attachments: unknown[]
  archived: unknown[]
  docs: { name: string; data: string }[]
}

const emptyBatch = (): Batch => ({
  texts: [],
  comments: [],
  attachments: [],
  archived: [],
  docs: [],
})

/** A Y.Map holding an entry's fields as they were exported. */
function entryMap(fields: Record<string, unknown>): Y.Map<unknown> {
  const m = new Y.Map<unknown>()
  for (const [k, v] of Object.entries(fields)) m.set(k, v)
  return m
}

function snapshot(fill: (doc: Y.Doc) => void): string {
  const doc = new Y.Doc()
  try {
    doc.transact(() => fill(doc))
    return Buffer.from(Y.encodeStateAsUpdate(doc)).toString('base64')
  } finally {
    doc.destroy()
  }
}

/** The pieces of a card's document and rows (on the board or archived). */
function addThread(
  batch: Batch,
  orgId: string,
  id: string,
  t: {
    description: string
    comments: z.output<typeof comment>[]
    attachments: z.output<typeof attachment>[]
  },
): void {
  for (const c of t.comments) batch.comments.push({ ...c, taskId: id })
  for (const a of t.attachments) batch.attachments.push({ ...a, taskId: id })
  batch.docs.push({
    name: cardDocName(orgId, id),
    data: snapshot((doc) => {
      const maps = cardMaps(doc)
      if (t.description) maps.description.insert(0, t.description)
      for (const c of t.comments) {
        maps.comments.set(
          c.id,
          entryMap({
            taskId: id,
            body: c.body,
            authorEmail: c.authorEmail,
            agentName: c.agentName,
            createdAt: c.createdAt,
            editedAt: c.editedAt,
          }),
        )
      }
      for (const a of t.attachments) {
        maps.attachments.set(
          a.id,
          entryMap({
            taskId: id,
            filename: a.filename,
            mimeType: a.mimeType,
            size: a.size,
            createdAt: a.createdAt,
          }),
        )
      }
    }),
  })
}

async function writeBatch(tx: Queryable, orgId: string, b: Batch): Promise<void> {
  if (b.texts.length > 0) {
    await tx.query(
      `insert into task_texts (id, org_id, title, description, archived)
       select x.id, $1, x.title, x.description, x.archived
         from jsonb_to_recordset($2::text::jsonb) as x (id uuid, title text, description text, archived boolean)`,
      [orgId, JSON.stringify(b.texts)],
    )
  }
  if (b.archived.length > 0) {
    await tx.query(
      `insert into archived_tasks (id, org_id, column_id, archived_at, record)
       select x.id, $1, x."columnId", x."archivedAt", x.record
         from jsonb_to_recordset($2::text::jsonb) as x (id uuid, "columnId" uuid, "archivedAt" timestamptz, record jsonb)`,
      [orgId, JSON.stringify(b.archived)],
    )
  }
  if (b.comments.length > 0) {
    await tx.query(
      `insert into comments (id, org_id, task_id, body, author_email, agent_name, created_at, edited_at)
       select x.id, $1, x."taskId", x.body, x."authorEmail", x."agentName", x."createdAt", x."editedAt"
         from jsonb_to_recordset($2::text::jsonb) as x (id uuid, "taskId" uuid, body text, "authorEmail" text,
              "agentName" text, "createdAt" timestamptz, "editedAt" timestamptz)`,
      [orgId, JSON.stringify(b.comments)],
    )
  }
  if (b.attachments.length > 0) {
    await tx.query(
      `insert into attachments (id, org_id, task_id, filename, mime_type, size, created_at)
       select x.id, $1, x."taskId", x.filename, x."mimeType", x.size, x."createdAt"
         from jsonb_to_recordset($2::text::jsonb) as x (id uuid, "taskId" uuid, filename text,
              "mimeType" text, size integer, "createdAt" timestamptz)`,
      [orgId, JSON.stringify(b.attachments)],
    )
  }
  await insertDocs(tx, b.docs)
}

async function insertDocs(tx: Queryable, docs: { name: string; data: string }[]): Promise<void> {
  if (docs.length === 0) return
  const names = docs.map((d) => d.name)
  const taken = await tx.query<{ doc_name: string }>(
    'select doc_name from doc_updates where doc_name = any($1::text[]) limit 1',
    [names],
  )
  if (taken[0]) {
    throw conflict(
      `The archive's ids are in use on this server (${taken[0].doc_name}): import it into another server, or after the organisation it came from was deleted`,
    )
  }
  await tx.query(
    `insert into doc_updates (doc_name, data, level)
     select u.doc_name, decode(u.data, 'base64'), $3
       from unnest($1::text[], $2::text[]) as u (doc_name, data)`,
    [names, docs.map((d) => d.data), LEVEL.snapshot],
  )
}

/** Whether the organisation holds nothing an import would mix with. */
async function assertEmpty(tx: Queryable, orgId: string, boardDoc: Y.Doc): Promise<void> {
  const maps = boardMaps(boardDoc)
  const [row] = await tx.query<{ held: string | null }>(
    `select coalesce(
       (select 'archived cards' from archived_tasks where org_id = $1 limit 1),
       (select 'cards' from task_texts where org_id = $1 limit 1),
       (select 'comments' from comments where org_id = $1 limit 1),
       (select 'mind maps' from maps where org_id = $1 limit 1),
       (select 'files' from files where org_id = $1 limit 1),
       (select 'webhooks' from webhooks where org_id = $1 limit 1),
       (select 'claims' from claims where org_id = $1 limit 1)) as held`,
    [orgId],
  )
  const held =
    maps.tasks.size > 0 ? 'cards' : maps.projects.size > 0 ? 'projects' : (row?.held ?? null)
  if (held) {
    throw conflict(
      `An archive imports only into an empty organisation, and this one holds ${held}: create a new organisation for it`,
    )
  }
}

/** The unique-violation code: an id of the archive is in use on this server. */
function isTaken(error: unknown): boolean {
  return (error as { code?: string }).code === '23505'
}

/** A value Postgres refused as malformed (a timestamp, a uuid, a number out of range). */
function isMalformed(error: unknown): boolean {
  const code = (error as { code?: string }).code ?? ''
  return code.startsWith('22')
}

/**
 * Reads the archive and, unless `dryRun`, writes it into the organisation. The report says
 * what was (or would be) created and what could not be kept as it was. The organisation's
 * lane is held while it writes; every open copy of its board is replaced afterwards.
 */
export async function importArchive(
  deps: ImportDeps,
  target: ImportTarget,
  body: AsyncIterable<Buffer> | Iterable<Buffer>,
  options: ImportOptions,
): Promise<ImportReport> {
  const { db, live, thread } = deps
  const importing = () =>
    thread ? thread.run(target, body, options) : importInto(db, target, body, options)
  if (options.dryRun) return importing()
  const boardName = boardDocName(target.orgId)
  const lane = live.lane(target.orgId)
  await live.flushPeople(target.orgId)
  const report = await lane.alone(importing)
  // Every process drops its copy of the old board; the app opens the imported one.
  live.closeConnections({ rebased: boardName })
  return report
}

/**
 * The import itself, touching nothing but `db` (no live state): reads the archive and,
 * unless `dryRun`, writes it in one transaction. The caller holds the organisation's lane.
 */
export async function importInto(
  db: Db,
  target: ImportTarget,
  body: AsyncIterable<Buffer> | Iterable<Buffer>,
  options: ImportOptions,
): Promise<ImportReport> {
  const boardName = boardDocName(target.orgId)
  const run = async (tx: Queryable | undefined): Promise<ImportReport> => {
    const counts: Record<string, number> = {}
    const count = (what: string, n = 1) => {
      counts[what] = (counts[what] ?? 0) + n
    }
    const notes: string[] = []
    const read: { name: string; size: number; sha256: string }[] = []
    let org: z.output<typeof orgEntry> | undefined
    let boardEntry: z.output<typeof board> | undefined
    let done: z.output<typeof manifest> | undefined
    const columns: z.output<typeof entry>[] = []
    const projects: z.output<typeof entry>[] = []
    const tasks: { id: string; fields: Record<string, unknown> }[] = []
    const fileRecords = new Map<string, z.output<typeof fileRecord>>()
    const filesSeen = new Set<string>()
    let lastKind = -1
    const membersAbsent: { email: string; role: z.output<typeof member>['role'] }[] = []
    let keysImported = 0
    let hooksImported = 0

    // The organisation's board as it is: it must hold nothing but columns.
    const oldBoard = new Y.Doc()
    if (tx) {
      await tx.query('select pg_advisory_xact_lock(hashtext($1))', [boardName])
      await tx.query(`select pg_advisory_xact_lock(hashtext('generation:' || $1))`, [boardName])
      await loadInto(tx, boardName, oldBoard)
      await assertEmpty(tx, target.orgId, oldBoard)
    }
    const userByEmail = async (email: string | null): Promise<string | undefined> => {
      if (!tx || email === null) return undefined
      const [u] = await tx.query<{ id: string }>('select id from users where email = $1', [email])
      return u?.id
    }

    const handle = async (name: string, bytes: Buffer): Promise<void> => {
      read.push({
        name,
        size: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
      })
      const ref = parseEntryName(name)
      if (!ref) throw badArchive(`it holds ${JSON.stringify(name)}, which the format does not have`)
      if (done) throw badArchive(`${name} follows ${MANIFEST_ENTRY}, which must come last`)
      if (!org && ref.type !== 'org') throw badArchive(`it must begin with ${ORG_ENTRY}`)
      if (ref.type === 'org') {
        if (org) throw badArchive(`${ORG_ENTRY} appears twice`)
        const raw = jsonOf(bytes, ORG_ENTRY) as { format?: unknown; version?: unknown }
        if (raw?.format !== FORMAT) throw badArchive(`${ORG_ENTRY} does not name the format`)
        if (raw.version !== FORMAT_VERSION) {
          throw new ApiError(
            400,
            `The archive is of format version ${String(raw.version)}; this server reads version ${FORMAT_VERSION}`,
          )
        }
        org = parsed(orgEntry, raw, ORG_ENTRY)
        return
      }
      if (ref.type === 'board') {
        boardEntry = parsed(board, jsonOf(bytes, name), name)
        return
      }
      if (ref.type === 'manifest') {
        done = parsed(manifest, jsonOf(bytes, name), name)
        return
      }
      if (ref.type === 'file') {
        const rec = fileRecords.get(ref.id)
        if (!rec) throw badArchive(`${name} has no record in file-records`)
        if (rec.extension !== ref.extension)
          throw badArchive(`${name}: its record says .${rec.extension}`)
        if (filesSeen.has(ref.id)) throw badArchive(`${name} appears twice`)
        filesSeen.add(ref.id)
        const sha = read.at(-1)?.sha256
        if (bytes.length !== rec.size || sha !== rec.sha256) {
          throw badArchive(`${name} does not match its record's size and SHA-256 (altered)`)
        }
        count('fileBytes', bytes.length)
        if (tx) {
          await tx.query(
            `insert into files (id, org_id, visibility, mime_type, extension, size, sha256, data, created_at)
             values ($1, $2, $3, $4, $5, $6, $7, decode($8, 'base64'), $9::text::timestamptz)`,
            [
              rec.id,
              target.orgId,
              rec.visibility,
              rec.mimeType,
              rec.extension,
              rec.size,
              rec.sha256,
              // As base64 text: a third more than the bytes, where the driver's hex is twice.
              bytes.toString('base64'),
              rec.createdAt,
            ],
          )
        }
        return
      }
      // A JSON Lines part: kinds in the format's order.
      const kindIndex = KINDS.indexOf(ref.kind)
      if (kindIndex < lastKind) throw badArchive(`${name} is out of order`)
      lastKind = kindIndex
      const batch = emptyBatch()
      const orgId = target.orgId
      // Line by line from the bytes: a part is never held as one string.
      let start = 0
      for (let i = 0; start < bytes.length; i++) {
        const end = bytes.indexOf(10, start)
        const line = bytes.toString('utf8', start, end === -1 ? bytes.length : end)
        start = end === -1 ? bytes.length : end + 1
        const where = `${name} line ${i + 1}`
        let raw: unknown
        try {
          raw = JSON.parse(line)
        } catch {
          throw badArchive(`${where} is not JSON`)
        }
        await record(ref.kind, raw, where, batch, orgId)
        // Written every few hundred cards: memory follows a batch, not a part.
        if (batch.docs.length >= BATCH_CARDS) {
          if (tx) await writeBatch(tx, orgId, batch)
          Object.assign(batch, emptyBatch())
        }
      }
      if (tx) await writeBatch(tx, orgId, batch)
    }

    const record = async (
      kind: Kind,
      raw: unknown,
      where: string,
      batch: Batch,
      orgId: string,
    ): Promise<void> => {
      switch (kind) {
        case 'members': {
          const m = parsed(member, raw, where)
          count('members')
          if (tx) {
            const [here] = await tx.query(
              'select 1 from memberships m join users u on u.id = m.user_id where m.org_id = $1 and u.email = $2',
              [orgId, m.email],
            )
            if (!here) membersAbsent.push(m)
          } else membersAbsent.push(m)
          return
        }
        case 'api-keys': {
          const k = parsed(apiKey, raw, where)
          count('apiKeys')
          keysImported += 1
          if (tx) {
            const creator = (await userByEmail(k.createdByEmail)) ?? target.userId
            await tx.query(
              'insert into users (id, email, name, is_robot, created_at) values ($1, $2, $3, true, $4::text::timestamptz)',
              [k.robotUserId, k.robotEmail, k.robotName, k.createdAt],
            )
            // The key's hash is a credential and stays behind: no key text matches this one.
            await tx.query(
              `insert into api_keys (id, org_id, name, prefix, key_hash, robot_user_id, created_by,
                                     created_at, revoked_at, last_used_at)
               values ($1, $2, $3, $4, $5, $6, $7, $8::text::timestamptz, $9::text::timestamptz,
                       $10::text::timestamptz)`,
              [
                k.id,
                orgId,
                k.name,
                k.prefix,
                `imported:${randomUUID()}`,
                k.robotUserId,
                creator,
                k.createdAt,
                k.revokedAt,
                k.lastUsedAt,
              ],
            )
          }
          return
        }
        case 'columns':
          columns.push(parsed(entry, raw, where))
          count('columns')
          return
        case 'projects':
          projects.push(parsed(entry, raw, where))
          count('projects')
          return
        case 'cards': {
          const c = parsed(card, raw, where)
          count('cards')
          count('comments', c.comments.length)
          count('attachments', c.attachments.length)
          tasks.push({ id: c.id, fields: c.card })
          const title = typeof c.card.title === 'string' ? c.card.title : ''
          batch.texts.push({
            id: c.id,
            title: c.title ?? title,
            description: c.description,
            archived: false,
          })
          addThread(batch, orgId, c.id, c)
          return
        }
        case 'archived': {
          const a = parsed(archivedCard, raw, where)
          count('archived')
          count('comments', a.comments.length)
          count('attachments', a.attachments.length)
          batch.archived.push({
            id: a.id,
            columnId: a.columnId,
            archivedAt: a.archivedAt,
            record: a.record,
          })
          if (a.title !== null) {
            batch.texts.push({
              id: a.id,
              title: a.title,
              description: a.description,
              archived: true,
            })
          }
          addThread(batch, orgId, a.id, a)
          return
        }
        case 'claims': {
          const c = parsed(claim, raw, where)
          count('claims')
          if (tx) {
            await tx.query(
              `insert into claims (task_id, org_id, key_id, agent_name, house, generation, is_sub_child,
                                   note, started_at, updated_at, expires_at, released_at)
               values ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::timestamptz, $10::text::timestamptz,
                       $11::text::timestamptz, $12::text::timestamptz)`,
              [
                c.taskId,
                orgId,
                c.keyId,
                c.agentName,
                c.house,
                c.generation,
                c.isSubChild,
                c.note,
                c.startedAt,
                c.updatedAt,
                c.expiresAt,
                c.releasedAt,
              ],
            )
          }
          return
        }
        case 'maps': {
          const m = parsed(mindMap, raw, where)
          count('maps')
          count('nodes', m.nodes.length)
          count('edges', m.edges.length)
          if (!tx) return
          await tx.query(
            `insert into maps (id, org_id, title, created_at, updated_at, deleted_at)
             values ($1, $2, $3, $4::text::timestamptz, $5::text::timestamptz, $6::text::timestamptz)`,
            [m.id, orgId, m.title, m.createdAt, m.updatedAt, m.deletedAt],
          )
          if (m.items.length > 0) {
            await tx.query(
              `insert into map_items (id, org_id, map_id, kind)
               select x.id, $1, $2, x.kind from jsonb_to_recordset($3::text::jsonb) as x (id uuid, kind text)`,
              [orgId, m.id, JSON.stringify(m.items)],
            )
          }
          if (m.deletedAt !== null) return
          const imagePath = /^\/files\/public\/[0-9a-f-]{36}\//
          const docs = [
            {
              name: mapDocName(orgId, m.id),
              data: snapshot((doc) => {
                const maps = mapDocMaps(doc)
                for (const [k, v] of Object.entries(m.meta)) maps.meta.set(k, v)
                for (const { id, ...fields } of m.nodes) {
                  // A node's image is a path under its organisation's id, which is this one's now.
                  const url = fields.imageUrl
                  if (typeof url === 'string' && imagePath.test(url)) {
                    fields.imageUrl = url.replace(imagePath, `/files/public/${orgId}/`)
                  }
                  maps.nodes.set(id, entryMap(fields))
                }
                for (const { id, ...fields } of m.edges) maps.edges.set(id, entryMap(fields))
              }),
            },
          ]
          await insertDocs(tx, docs)
          return
        }
        case 'webhooks': {
          const h = parsed(webhook, raw, where)
          count('webhooks')
          hooksImported += 1
          if (tx) {
            await tx.query(
              `insert into webhooks (id, org_id, url, events, secret, enabled, disabled_reason,
                                     disabled_at, consecutive_failures, created_by, created_at)
               values ($1, $2, $3, $4, $5, $6, $7, $8::text::timestamptz, $9, $10,
                       $11::text::timestamptz)`,
              [
                h.id,
                orgId,
                h.url,
                h.events,
                newWebhookSecret(),
                h.enabled,
                h.disabledReason,
                h.disabledAt,
                h.consecutiveFailures,
                (await userByEmail(h.createdByEmail)) ?? null,
                h.createdAt,
              ],
            )
          }
          return
        }
        case 'file-records': {
          const f = parsed(fileRecord, raw, where)
          if (fileRecords.has(f.id)) throw badArchive(`${where}: file ${f.id} appears twice`)
          fileRecords.set(f.id, f)
          count('files')
          return
        }
      }
    }

    // Entries are read whole (the format keeps each under MAX_ENTRY_BYTES), each into one
    // buffer: no joining of the pieces after. The buffer is reused, grown to the largest
    // entry so far: `handle` keeps nothing of an entry's bytes once it returns, and an
    // import of thousands of files allocates none per file.
    let room = Buffer.allocUnsafeSlow(0)
    let current: { name: string; bytes: Buffer; filled: number } | undefined
    await readTar(unpacked(body, options.maxBytes), {
      start(e) {
        if (e.size > MAX_ENTRY_BYTES) {
          throw badArchive(`${e.name} is larger than ${MAX_ENTRY_BYTES} bytes`)
        }
        if (e.size > room.length) room = Buffer.allocUnsafeSlow(e.size)
        current = { name: e.name, bytes: room.subarray(0, e.size), filled: 0 }
      },
      chunk(data) {
        if (!current) return
        current.filled += data.copy(current.bytes, current.filled)
      },
      async end() {
        const c = current as { name: string; bytes: Buffer }
        current = undefined
        await handle(c.name, c.bytes)
      },
    })

    if (!org) throw badArchive(`it holds no ${ORG_ENTRY}`)
    if (!done) throw badArchive(`it ends without ${MANIFEST_ENTRY} (truncated)`)
    if (!boardEntry) throw badArchive('it holds no board.json')
    // Every entry as the manifest lists it, in its order, with its size and SHA-256.
    const listed = done.entries
    const got = read.slice(0, -1)
    for (let i = 0; i < Math.max(listed.length, got.length); i++) {
      const l = listed[i]
      const g = got[i]
      if (!l) throw badArchive(`${g?.name} is not in the manifest (added)`)
      if (!g) throw badArchive(`${l.name} is missing (the manifest lists it)`)
      if (l.name !== g.name)
        throw badArchive(`${l.name} is missing or out of place (found ${g.name})`)
      if (l.size !== g.size || l.sha256 !== g.sha256) {
        throw badArchive(
          `${l.name} does not match its SHA-256 in the manifest (altered or damaged)`,
        )
      }
    }
    for (const [what, n] of Object.entries(done.counts)) {
      if ((counts[what] ?? 0) !== n) {
        throw badArchive(`the manifest counts ${n} ${what}, the archive holds ${counts[what] ?? 0}`)
      }
    }
    for (const id of fileRecords.keys()) {
      if (!filesSeen.has(id)) throw badArchive(`file ${id} has a record but no bytes`)
    }
    if (done.orgId !== org.id) throw badArchive(`the manifest names another organisation`)

    if (tx) {
      // The board starts over as the next generation, holding the archive's board.
      const ended = await storedGeneration(tx, boardName)
      const b = boardEntry
      const data = snapshot((doc) => {
        const maps = boardMaps(doc)
        for (const [k, v] of Object.entries(b.meta)) doc.getMap('meta').set(k, v)
        doc.getMap('meta').set('generation', ended + 1)
        for (const { id, ...fields } of columns) maps.columns.set(id, entryMap(fields))
        for (const { id, ...fields } of projects) maps.projects.set(id, entryMap(fields))
        for (const t of tasks) maps.tasks.set(t.id, entryMap(t.fields))
        for (const [k, v] of Object.entries(b.claims)) maps.claims.set(k, v as never)
      })
      await tx.query('delete from doc_updates where doc_name = $1', [boardName])
      await tx.query('insert into doc_updates (doc_name, data, level) values ($1, $2, $3)', [
        boardName,
        Buffer.from(data, 'base64'),
        LEVEL.snapshot,
      ])
      await endGeneration(tx, boardName, {
        generation: ended,
        stateVector: Y.encodeStateVector(oldBoard),
        base: docJson('board', oldBoard),
      })
    }
    oldBoard.destroy()

    const invites: ImportReport['invites'] = []
    for (const m of membersAbsent) {
      const role = m.role === 'member' ? 'member' : 'admin'
      if (!tx) {
        invites.push({ email: m.email, role, token: null, expiresAt: null })
        continue
      }
      const made = await createInvite(tx, {
        orgId: target.orgId,
        email: m.email,
        role,
        createdBy: target.userId,
      })
      invites.push({ email: made.email, role, token: made.token, expiresAt: made.expiresAt })
    }
    const owners = membersAbsent.filter((m) => m.role === 'owner').length
    if (invites.length > 0) {
      notes.push(
        `${invites.length} ${invites.length === 1 ? 'person who is' : 'people who are'} not a member here ${tx ? (invites.length === 1 ? 'is' : 'are') : 'will be'} invited with their role (send each their link before its invite expires)${owners > 0 ? `; ${owners === 1 ? 'an owner is' : `${owners} owners are`} invited as admin: make them owners once they join` : ''}`,
      )
    }
    if (keysImported > 0) {
      notes.push(
        `${keysImported} API keys are kept as records (their claims and writes keep their names) but never authenticate here: keys are credentials and stay behind; create new keys for your agents`,
      )
    }
    if (hooksImported > 0) {
      notes.push(
        `${hooksImported} webhooks have new signing secrets: rotate each one's secret to learn it before enabling deliveries to its receiver`,
      )
    }
    return {
      dryRun: tx === undefined,
      source: { orgId: org.id, name: org.name, exportedAt: org.exportedAt },
      counts,
      invites,
      notes,
    }
  }

  if (options.dryRun) return run(undefined)
  try {
    return await db.transaction((tx) => run(tx))
  } catch (error) {
    if (error instanceof ApiError) throw error
    if (isTaken(error)) {
      throw conflict(
        `The archive's ids are in use on this server: import it into another server, or after the organisation it came from was deleted (${(error as Error).message})`,
      )
    }
    if (isMalformed(error)) {
      throw badArchive(`a value is malformed (${(error as Error).message})`)
    }
    throw error
  }
}
