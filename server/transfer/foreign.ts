import { createHash, randomUUID } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { COLUMN_ROLES, type ColumnRole, LIMITS, POSITION_STEP } from '../../shared/constants.ts'
import { badRequest } from '../errors.ts'
import {
  BOARD_ENTRY,
  FORMAT,
  FORMAT_VERSION,
  type Kind,
  MANIFEST_ENTRY,
  type Manifest,
  ORG_ENTRY,
  partName,
} from './format.ts'
import { TAR_END, tarHeader, tarPadding } from './tar.ts'

/**
 * Moving in from another tracker (docs/export.md, "Moving in"): a Trello board's JSON
 * export, GitHub issues as `gh issue list --json ...` writes them, or Linear's CSV export,
 * turned into an export archive of this format and imported like one (one transaction,
 * into an empty organisation). What has no place of its own on a card is kept in its
 * description under "Imported from …", never dropped silently; the report names each
 * field and what became of it.
 */

export type Source = 'trello' | 'github' | 'linear'

interface MovedComment {
  body: string
  author: string
  createdAt: string
}

interface MovedCard {
  title: string
  description: string
  column: string
  tags: string[]
  priority: 'urgent' | 'high' | 'normal' | 'low' | null
  createdAt: string
  updatedAt: string
  createdBy: string
  /** Set: the card goes to the archive at this time. */
  archivedAt: string | null
  comments: MovedComment[]
}

export interface Moved {
  source: Source
  name: string
  /** Column titles, in board order. */
  columns: string[]
  cards: MovedCard[]
  /** Source field → what it became ("column", "tags", "description", …). */
  mapped: Record<string, string>
  /** Source fields kept only as text in the description (or, when named, left out). */
  unmapped: Record<string, string>
}

type Json = Record<string, unknown>

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const text = (v: unknown): string => (typeof v === 'string' ? v : v == null ? '' : String(v))
const isEmpty = (v: unknown) =>
  v === null ||
  v === undefined ||
  v === '' ||
  v === false ||
  (Array.isArray(v) && v.length === 0) ||
  (isObject(v) && Object.keys(v).length === 0)

/** A timestamp as the service writes them, or `fallback` when the source has none. */
function when(v: unknown, fallback: string): string {
  const d = new Date(text(v))
  return Number.isNaN(d.getTime()) || text(v) === '' ? fallback : d.toISOString()
}

function tagOf(name: string): string | undefined {
  const t = name.trim().slice(0, LIMITS.tagLength)
  return t === '' ? undefined : t
}

/** Fields the source has that no card field holds: as a list under the description. */
function keptFields(source: string, fields: [string, unknown][]): string {
  const lines = fields
    .filter(([, v]) => !isEmpty(v))
    .map(([k, v]) => `- ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
  return lines.length === 0 ? '' : `\n\n---\nImported from ${source}:\n${lines.join('\n')}`
}

function note(record: Record<string, string>, field: string, what: string): void {
  record[field] ??= what
}

// ---------------------------------------------------------------- Trello

const TRELLO_CARD_KNOWN = new Set([
  'id',
  'name',
  'desc',
  'closed',
  'idList',
  'idLabels',
  'labels',
  'idChecklists',
  'pos',
  'dateLastActivity',
])

/** A Trello board's JSON export (Board menu → Print, export and share → Export as JSON). */
export function fromTrello(board: Json, now: string): Moved {
  const mapped: Record<string, string> = {}
  const unmapped: Record<string, string> = {}
  const lists = (Array.isArray(board.lists) ? board.lists : []).filter(isObject)
  const cards = (Array.isArray(board.cards) ? board.cards : []).filter(isObject)
  const checklists = (Array.isArray(board.checklists) ? board.checklists : []).filter(isObject)
  const actions = (Array.isArray(board.actions) ? board.actions : []).filter(isObject)
  const members = new Map(
    (Array.isArray(board.members) ? board.members : [])
      .filter(isObject)
      .map((m) => [text(m.id), m] as const),
  )
  const labels = new Map(
    (Array.isArray(board.labels) ? board.labels : [])
      .filter(isObject)
      .map((l) => [text(l.id), l] as const),
  )
  const byPos = (a: Json, b: Json) => Number(a.pos ?? 0) - Number(b.pos ?? 0)
  lists.sort(byPos)
  const listName = new Map(lists.map((l) => [text(l.id), text(l.name) || 'Untitled list']))
  note(mapped, 'lists', 'columns, in their order')
  note(mapped, 'cards.name', 'title')
  note(mapped, 'cards.desc', 'description')
  note(mapped, 'cards.labels', 'tags (a label without a name by its colour)')
  note(mapped, 'cards.closed', 'archived')
  note(mapped, 'checklists', 'description, as a task list')
  note(mapped, 'actions[commentCard]', "comments, with their authors' names")
  const commentsOf = new Map<string, MovedComment[]>()
  for (const a of actions) {
    if (a.type !== 'commentCard') continue
    const data = isObject(a.data) ? a.data : {}
    const cardId = text(isObject(data.card) ? data.card.id : '')
    const who = isObject(a.memberCreator) ? a.memberCreator : members.get(text(a.idMemberCreator))
    const author = who
      ? `${text(who.fullName) || text(who.username)}${who.username ? ` (@${text(who.username)})` : ''}`
      : 'someone on Trello'
    const list = commentsOf.get(cardId) ?? []
    list.push({ body: text(data.text), author, createdAt: when(a.date, now) })
    commentsOf.set(cardId, list)
  }
  if (actions.some((a) => a.type !== 'commentCard')) {
    note(unmapped, 'actions (other than comments)', 'left out: the board history is not imported')
  }
  const moved: MovedCard[] = []
  for (const c of cards.sort(byPos)) {
    const id = text(c.id)
    const cardLabels = (Array.isArray(c.labels) ? c.labels : [])
      .filter(isObject)
      .concat(
        (Array.isArray(c.idLabels) ? c.idLabels : [])
          .map((l) => labels.get(text(l)))
          .filter(isObject),
      )
    const tags = [
      ...new Set(
        cardLabels.map((l) => tagOf(text(l.name) || text(l.color))).filter((t) => t !== undefined),
      ),
    ].slice(0, LIMITS.tagsPerCard)
    let description = text(c.desc)
    for (const list of checklists.filter((k) => text(k.idCard) === id)) {
      const items = (Array.isArray(list.checkItems) ? list.checkItems : []).filter(isObject)
      items.sort(byPos)
      description += `\n\n### ${text(list.name) || 'Checklist'}\n${items
        .map((i) => `- [${i.state === 'complete' ? 'x' : ' '}] ${text(i.name)}`)
        .join('\n')}`
    }
    const extra: [string, unknown][] = []
    for (const [k, v] of Object.entries(c)) {
      if (TRELLO_CARD_KNOWN.has(k) || isEmpty(v)) continue
      if (k === 'idMembers' && Array.isArray(v)) {
        extra.push([
          'members',
          v.map((m) => text(members.get(text(m))?.fullName) || text(m)).join(', '),
        ])
      } else extra.push([k, v])
      note(unmapped, `cards.${k}`, 'kept in the description')
    }
    const closed = c.closed === true
    const updated = when(c.dateLastActivity, now)
    moved.push({
      title: text(c.name) || 'Untitled card',
      description: description.trim() + keptFields('Trello', extra),
      column: listName.get(text(c.idList)) ?? lists[0]?.name?.toString() ?? 'Imported',
      tags,
      priority: null,
      createdAt: updated,
      updatedAt: updated,
      createdBy: 'Trello',
      archivedAt: closed ? updated : null,
      comments: (commentsOf.get(id) ?? []).sort((a, b) => a.createdAt.localeCompare(b.createdAt)),
    })
  }
  return {
    source: 'trello',
    name: text(board.name) || 'Trello board',
    columns: lists.map((l) => text(l.name) || 'Untitled list'),
    cards: moved,
    mapped,
    unmapped,
  }
}

// ---------------------------------------------------------------- GitHub

const GITHUB_KNOWN = new Set([
  'number',
  'title',
  'body',
  'state',
  'labels',
  'author',
  'comments',
  'createdAt',
  'updatedAt',
  'closedAt',
])

const login = (v: unknown) =>
  isObject(v) ? text(v.login) || text(v.name) || 'someone on GitHub' : 'someone on GitHub'

/** GitHub issues as `gh issue list --state all --json number,title,body,state,labels,assignees,author,comments,createdAt,updatedAt,closedAt,...` writes them. */
export function fromGitHub(issues: unknown[], now: string): Moved {
  const mapped: Record<string, string> = {}
  const unmapped: Record<string, string> = {}
  note(mapped, 'title', 'title (with its #number)')
  note(mapped, 'body', 'description')
  note(mapped, 'state', 'column Open or Closed; closed issues archived')
  note(mapped, 'labels', 'tags')
  note(mapped, 'comments', "comments, with their authors' logins")
  note(mapped, 'author', 'the card’s creator (login)')
  const moved: MovedCard[] = []
  for (const issue of issues.filter(isObject).sort((a, b) => Number(a.number) - Number(b.number))) {
    const closed = text(issue.state).toUpperCase() === 'CLOSED'
    const extra: [string, unknown][] = []
    for (const [k, v] of Object.entries(issue)) {
      if (GITHUB_KNOWN.has(k) || isEmpty(v)) continue
      if (k === 'assignees' && Array.isArray(v)) extra.push(['assignees', v.map(login).join(', ')])
      else if (k === 'milestone' && isObject(v)) extra.push(['milestone', text(v.title)])
      else extra.push([k, v])
      note(unmapped, k, 'kept in the description')
    }
    const created = when(issue.createdAt, now)
    const comments = (Array.isArray(issue.comments) ? issue.comments : [])
      .filter(isObject)
      .map((c) => ({
        body: text(c.body),
        author: login(c.author),
        createdAt: when(c.createdAt, created),
      }))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
    const labels = (Array.isArray(issue.labels) ? issue.labels : []).filter(isObject)
    moved.push({
      title: `#${text(issue.number)} ${text(issue.title)}`.trim(),
      description: text(issue.body).trim() + keptFields('GitHub', extra),
      column: closed ? 'Closed' : 'Open',
      tags: [
        ...new Set(labels.map((l) => tagOf(text(l.name))).filter((t) => t !== undefined)),
      ].slice(0, LIMITS.tagsPerCard),
      priority: null,
      createdAt: created,
      updatedAt: when(issue.updatedAt, created),
      createdBy: login(issue.author),
      archivedAt: closed ? when(issue.closedAt, when(issue.updatedAt, created)) : null,
      comments,
    })
  }
  return {
    source: 'github',
    name: 'GitHub issues',
    columns: ['Open', 'Closed'],
    cards: moved,
    mapped,
    unmapped,
  }
}

// ---------------------------------------------------------------- Linear

/** RFC 4180 CSV: quoted fields may hold commas, quotes ("") and line breaks. */
export function parseCsv(input: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  const s = input.replace(/^\uFEFF/, '')
  for (let i = 0; i < s.length; i++) {
    const ch = s[i] as string
    if (quoted) {
      if (ch === '"') {
        if (s[i + 1] === '"') {
          field += '"'
          i++
        } else quoted = false
      } else field += ch
      continue
    }
    if (ch === '"' && field === '') quoted = true
    else if (ch === ',') {
      row.push(field)
      field = ''
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && s[i + 1] === '\n') i++
      row.push(field)
      rows.push(row)
      row = []
      field = ''
    } else field += ch
  }
  if (quoted) throw badRequest('The CSV ends inside a quoted field (truncated?)')
  if (field !== '' || row.length > 0) {
    row.push(field)
    rows.push(row)
  }
  return rows.filter((r) => !(r.length === 1 && r[0] === ''))
}

const LINEAR_PRIORITY: Record<string, MovedCard['priority']> = {
  urgent: 'urgent',
  high: 'high',
  medium: 'normal',
  normal: 'normal',
  low: 'low',
}

const LINEAR_KNOWN = new Set([
  'Title',
  'Description',
  'Status',
  'Priority',
  'Labels',
  'Creator',
  'Created',
  'Updated',
  'Archived',
  'Canceled',
])

/** Linear's CSV export (Settings → Import / export → Export CSV). */
export function fromLinear(csv: string, now: string): Moved {
  const rows = parseCsv(csv)
  const header = rows[0]
  if (!header?.includes('Title') || !header.includes('Status')) {
    throw badRequest('This CSV is not a Linear export: its header has no Title and Status columns')
  }
  const mapped: Record<string, string> = {}
  const unmapped: Record<string, string> = {}
  note(mapped, 'Title', 'title (with its ID)')
  note(mapped, 'Description', 'description')
  note(mapped, 'Status', 'column (one per status, in order of appearance)')
  note(mapped, 'Priority', 'priority (Medium as normal)')
  note(mapped, 'Labels', 'tags')
  note(mapped, 'Archived', 'archived')
  note(mapped, 'Canceled', 'archived')
  const columns: string[] = []
  const moved: MovedCard[] = []
  for (const r of rows.slice(1)) {
    const get = (name: string) => r[header.indexOf(name)] ?? ''
    const status = get('Status') || 'Imported'
    if (!columns.includes(status)) columns.push(status)
    const extra: [string, unknown][] = []
    for (const [i, name] of header.entries()) {
      if (LINEAR_KNOWN.has(name) || (r[i] ?? '') === '') continue
      extra.push([name, r[i]])
      note(unmapped, name, 'kept in the description')
    }
    const created = when(get('Created'), now)
    const gone = get('Archived') || get('Canceled')
    const id = get('ID')
    moved.push({
      title: `${id ? `${id} ` : ''}${get('Title')}`.trim() || 'Untitled issue',
      description: get('Description').trim() + keptFields('Linear', extra),
      column: status,
      tags: [
        ...new Set(
          get('Labels')
            .split(',')
            .map(tagOf)
            .filter((t) => t !== undefined),
        ),
      ].slice(0, LIMITS.tagsPerCard),
      priority: LINEAR_PRIORITY[get('Priority').trim().toLowerCase()] ?? null,
      createdAt: created,
      updatedAt: when(get('Updated'), created),
      createdBy: get('Creator') || 'Linear',
      archivedAt: gone ? when(gone, created) : null,
      comments: [],
    })
  }
  return { source: 'linear', name: 'Linear issues', columns, cards: moved, mapped, unmapped }
}

// ---------------------------------------------------------------- to an archive

/** The role a column's title suggests, each role given once. */
function rolesOf(titles: string[]): (ColumnRole | null)[] {
  const patterns: [ColumnRole, RegExp][] = [
    ['backlog', /backlog|to ?do|icebox|open|triage/i],
    ['ready', /ready|next|todo|up next/i],
    ['in_progress', /doing|progress|started|review/i],
    ['done', /done|complete|closed|shipped|finished/i],
  ]
  const taken = new Set<ColumnRole>()
  return titles.map((t) => {
    for (const [role, re] of patterns) {
      if (!taken.has(role) && re.test(t) && COLUMN_ROLES.includes(role)) {
        taken.add(role)
        return role
      }
    }
    return null
  })
}

/** The description cut to the limit, saying so. */
function fitted(description: string, cut: { n: number }): string {
  const max = LIMITS.taskDescription.max
  if (description.length <= max) return description
  cut.n += 1
  const tail = '\n\n[cut at 20,000 characters on import]'
  return description.slice(0, max - tail.length) + tail
}

/** What a moved-in board makes, as an export archive (gzipped tar) of this format. */
export function archiveOf(moved: Moved, now: string): { archive: Buffer; cut: number } {
  const cut = { n: 0 }
  const chunks: Buffer[] = []
  const entries: Manifest['entries'] = []
  const counts: Record<string, number> = {}
  const mtime = new Date(now)
  const put = (name: string, bytes: Buffer) => {
    entries.push({
      name,
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    })
    chunks.push(tarHeader(name, bytes.length, mtime), bytes, tarPadding(bytes.length))
  }
  const jsonl = (kind: Kind, records: unknown[]) => {
    counts[kind] = records.length
    if (records.length > 0)
      put(partName(kind, 1), Buffer.from(records.map((r) => `${JSON.stringify(r)}\n`).join('')))
  }
  const orgId = randomUUID()
  put(
    ORG_ENTRY,
    Buffer.from(
      JSON.stringify({
        format: FORMAT,
        version: FORMAT_VERSION,
        id: orgId,
        name: moved.name,
        createdAt: now,
        exportedAt: now,
      }),
    ),
  )
  put(BOARD_ENTRY, Buffer.from(JSON.stringify({ meta: {}, claims: {} })))
  const roles = rolesOf(moved.columns)
  const columnIds = new Map<string, string>()
  const columns = moved.columns.map((title, i) => {
    const id = randomUUID()
    columnIds.set(title, id)
    return {
      id,
      title: title.slice(0, LIMITS.columnTitle.max),
      position: (i + 1) * POSITION_STEP,
      role: roles[i] ?? null,
      projectId: null,
      onFire: false,
      createdAt: now,
      updatedAt: now,
    }
  })
  jsonl('columns', columns)
  const onBoard: unknown[] = []
  const archived: unknown[] = []
  let commentCount = 0
  const position = new Map<string, number>()
  for (const c of moved.cards) {
    const id = randomUUID()
    const columnId = columnIds.get(c.column) ?? (columns[0]?.id as string)
    const comments = c.comments
      .filter((x) => x.body.trim() !== '')
      .map((x) => ({
        id: randomUUID(),
        body: x.body.slice(0, LIMITS.commentBody.max),
        authorEmail: x.author,
        agentName: null,
        createdAt: x.createdAt,
        editedAt: null,
      }))
    commentCount += comments.length
    const last = comments.at(-1)
    const pos = (position.get(columnId) ?? 0) + POSITION_STEP
    position.set(columnId, pos)
    const fields = {
      columnId,
      projectId: null,
      title: c.title.slice(0, LIMITS.taskTitle.max),
      type: null,
      priority: c.priority,
      tags: c.tags,
      assigneeIds: [],
      position: pos,
      createdAt: c.createdAt,
      updatedAt: c.updatedAt,
      archivedAt: c.archivedAt,
      createdByEmail: c.createdBy,
      stats: {
        commentCount: comments.length,
        imageCount: 0,
        lastCommentBy: last ? 'human' : null,
        lastCommentAt: last?.createdAt ?? null,
        lastCommentAuthor: last?.authorEmail ?? null,
      },
    }
    const thread = {
      title: fields.title,
      description: fitted(c.description, cut),
      comments,
      attachments: [],
    }
    if (c.archivedAt) {
      archived.push({ id, columnId, archivedAt: c.archivedAt, record: fields, ...thread })
    } else onBoard.push({ id, card: fields, ...thread })
  }
  jsonl('cards', onBoard)
  jsonl('archived', archived)
  counts.comments = commentCount
  counts.attachments = 0
  const manifest: Manifest = {
    format: FORMAT,
    version: FORMAT_VERSION,
    orgId,
    exportedAt: now,
    counts,
    entries,
  }
  const body = Buffer.from(JSON.stringify(manifest))
  chunks.push(tarHeader(MANIFEST_ENTRY, body.length, mtime), body, tarPadding(body.length), TAR_END)
  return { archive: gzipSync(Buffer.concat(chunks)), cut: cut.n }
}
