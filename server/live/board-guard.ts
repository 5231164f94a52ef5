import * as Y from 'yjs'
import { boardMaps } from '../../shared/board-doc.ts'
import { COLUMN_ROLES, LIMITS, PRIORITIES, TASK_TYPES } from '../../shared/constants.ts'
import { replaceText } from '../../shared/ytext.ts'
import type { ChangeKind, DomainEvent } from './origin.ts'

/**
 * Holds people's live edits of a board document to the rules agents obey. Hocuspocus
 * cannot veto an update, so the guard runs synchronously after each transaction that came
 * from a connection and applies a compensating transaction at once: values outside the
 * specification's limits, writes to server-owned fields, removals, and any edit of a card
 * another actor holds are put back to the last valid state, which the guard keeps in
 * memory (so the revert path has no await). Valid edits are stamped (`updatedAt`,
 * authorship) and reported as change rows and events, like an agent's.
 */

export interface Editor {
  email: string
  /** Set for a connection opened with an API key: that key's claims do not lock it out. */
  keyId?: string | undefined
}

export interface GuardReport {
  editor: Editor
  changes: { kind: ChangeKind; entityId: string }[]
  events: DomainEvent[]
  /** Why parts of the edit were undone, for the person who made it. */
  reverts: { reason: string; taskId?: string }[]
}

/** Marks the guard's own compensating transactions. */
export const GUARD_ORIGIN = {
  source: 'local',
  skipStoreHooks: true,
  context: { guard: true },
} as const

export type Json = Record<string, unknown>

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const HEX = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/
const TASK_OWNED = ['createdAt', 'createdByEmail'] as const
const COMMENT_OWNED = ['taskId', 'authorEmail', 'agentName', 'createdAt', 'editedAt'] as const

export function snapshot(m: Y.Map<unknown>): Json {
  const out: Json = {}
  m.forEach((v, k) => {
    out[k] = v instanceof Y.Text ? v.toString() : v instanceof Y.AbstractType ? v.toJSON() : v
  })
  return out
}

/** A fresh Y.Map holding a snapshot (a card's description becomes a Y.Text again). */
export function rebuild(s: Json, textKeys: readonly string[] = []): Y.Map<unknown> {
  const m = new Y.Map<unknown>()
  for (const [k, v] of Object.entries(s))
    m.set(k, textKeys.includes(k) ? new Y.Text(String(v ?? '')) : v)
  return m
}

const isString = (v: unknown): v is string => typeof v === 'string'
const nullableOf = (v: unknown, values: readonly string[]) =>
  v === null || v === undefined || values.includes(v as string)
const len = (v: unknown, min: number, max: number) =>
  isString(v) && v.length >= min && v.length <= max
const finite = (v: unknown) => typeof v === 'number' && Number.isFinite(v)

/** The first rule a task field breaks, or undefined. `doc` resolves columns and projects. */
function taskFieldError(
  key: string,
  v: unknown,
  maps: ReturnType<typeof boardMaps>,
): string | undefined {
  switch (key) {
    case 'title':
      return len(v, LIMITS.taskTitle.min, LIMITS.taskTitle.max)
        ? undefined
        : `title must be 1–${LIMITS.taskTitle.max} characters`
    case 'description': {
      const text = v instanceof Y.Text ? v.toString() : v
      return isString(text) && text.length <= LIMITS.taskDescription.max
        ? undefined
        : `description must be at most ${LIMITS.taskDescription.max} characters`
    }
    case 'type':
      return nullableOf(v, TASK_TYPES) ? undefined : `type must be one of ${TASK_TYPES.join(', ')}`
    case 'priority':
      return nullableOf(v, PRIORITIES)
        ? undefined
        : `priority must be one of ${PRIORITIES.join(', ')}`
    case 'tags': {
      if (!Array.isArray(v) || !v.every(isString)) return 'tags must be a list of strings'
      if (v.length > LIMITS.tagsPerCard) return `a card has at most ${LIMITS.tagsPerCard} tags`
      if (v.some((t) => t.trim() === '' || t.length > LIMITS.tagLength))
        return `each tag is 1–${LIMITS.tagLength} characters`
      const folded = new Set(v.map((t) => t.trim().toLowerCase()))
      return folded.size === v.length ? undefined : 'tags must not repeat (case-insensitively)'
    }
    case 'assigneeIds':
      return Array.isArray(v) && v.every((x) => isString(x) && UUID.test(x))
        ? undefined
        : 'assigneeIds must be a list of ids'
    case 'columnId':
      return isString(v) && maps.columns.has(v)
        ? undefined
        : 'the card must sit in an existing column'
    case 'projectId':
      return v === null || (isString(v) && maps.projects.has(v))
        ? undefined
        : 'projectId must be an existing project or null'
    case 'position':
      return finite(v) ? undefined : 'position must be a finite number'
    case 'archivedAt':
      return v === null || (isString(v) && !Number.isNaN(Date.parse(v)))
        ? undefined
        : 'archivedAt must be a timestamp or null'
    case 'updatedAt':
      return undefined
    default:
      return `cards have no field ${key}`
  }
}

function columnFieldError(
  key: string,
  v: unknown,
  maps: ReturnType<typeof boardMaps>,
): string | undefined {
  switch (key) {
    case 'title':
      return len(v, LIMITS.columnTitle.min, LIMITS.columnTitle.max)
        ? undefined
        : `column title must be 1–${LIMITS.columnTitle.max} characters`
    case 'position':
      return finite(v) ? undefined : 'position must be a finite number'
    case 'role':
      return nullableOf(v, COLUMN_ROLES)
        ? undefined
        : `role must be one of ${COLUMN_ROLES.join(', ')} or null`
    case 'projectId':
      return v === null || (isString(v) && maps.projects.has(v))
        ? undefined
        : 'projectId must be an existing project or null'
    case 'onFire':
      return typeof v === 'boolean' ? undefined : 'onFire must be true or false'
    case 'createdAt':
    case 'updatedAt':
      return undefined
    default:
      return `columns have no field ${key}`
  }
}

function projectFieldError(key: string, v: unknown): string | undefined {
  switch (key) {
    case 'name':
      return len(v, LIMITS.projectName.min, LIMITS.projectName.max)
        ? undefined
        : `project name must be 1–${LIMITS.projectName.max} characters`
    case 'color':
      return isString(v) && HEX.test(v) ? undefined : 'color must be a # hex colour'
    case 'createdAt':
      return undefined
    default:
      return `projects have no field ${key}`
  }
}

/** The root map and key an edited type belongs to (a card's description resolves to the card). */
export function locate(type: object, roots: Map<object, string>): [string, string] | undefined {
  let t: object | null = type
  let key: string | null = null
  while (t) {
    const root = roots.get(t)
    if (root) return key === null ? undefined : [root, key]
    const item: Y.Item | null = (t as { _item: Y.Item | null })._item
    if (!item || item.deleted) return undefined
    key = item.parentSub
    t = item.parent as object | null
  }
  return undefined
}

/** The entities a transaction touched, as [root name, key] pairs (nested edits resolve to their entity). */
export function touchedEntities(tr: Y.Transaction, roots: Map<object, string>): [string, string][] {
  const out = new Map<string, [string, string]>()
  for (const [type, keys] of tr.changed) {
    const root = roots.get(type)
    if (root) {
      for (const key of keys) if (key !== null) out.set(`${root}/${key}`, [root, key])
      continue
    }
    const at = locate(type, roots)
    if (at) out.set(`${at[0]}/${at[1]}`, at)
  }
  return [...out.values()]
}

export class BoardGuard {
  private readonly doc: Y.Doc
  private readonly maps: ReturnType<typeof boardMaps>
  private readonly roots: Map<object, string>
  /** Last valid state of every entity, per root map. */
  private readonly last = new Map<string, Map<string, Json>>()
  private readonly now: () => Date

  constructor(doc: Y.Doc, now: () => Date = () => new Date()) {
    this.doc = doc
    this.now = now
    this.maps = boardMaps(doc)
    this.roots = new Map<object, string>([
      [this.maps.columns, 'columns'],
      [this.maps.projects, 'projects'],
      [this.maps.tasks, 'tasks'],
      [this.maps.comments, 'comments'],
      [this.maps.attachments, 'attachments'],
      [this.maps.claims, 'claims'],
    ])
    for (const [root, name] of this.roots) {
      const entries = new Map<string, Json>()
      ;(root as Y.Map<unknown>).forEach((v, k) => {
        entries.set(k, v instanceof Y.Map ? snapshot(v) : { value: v })
      })
      this.last.set(name, entries)
    }
  }

  private touched(tr: Y.Transaction): [string, string][] {
    return touchedEntities(tr, this.roots)
  }

  /** Records the new valid state after a transaction the server made or accepted. */
  remember(tr: Y.Transaction): void {
    for (const [root, key] of this.touched(tr)) this.rememberOne(root, key)
  }

  private rememberOne(root: string, key: string): void {
    const value = (this.maps[root as keyof typeof this.maps] as Y.Map<unknown>).get(key)
    const entries = this.last.get(root) as Map<string, Json>
    if (value === undefined) entries.delete(key)
    else entries.set(key, value instanceof Y.Map ? snapshot(value) : { value })
  }

  /** Is the card held by a live claim of someone other than this editor? Returns the holder label. */
  private heldBy(taskId: string, editor: Editor): string | undefined {
    const claim = this.maps.claims.get(taskId) as Json | undefined
    if (!claim || claim.releasedAt || Date.parse(String(claim.expiresAt)) <= this.now().getTime())
      return undefined
    if (editor.keyId && claim.keyId === editor.keyId) return undefined
    return String(claim.holder ?? 'an agent')
  }

  /**
   * Checks a person's transaction and compensates what is not allowed, in one server
   * transaction. Returns what was accepted (for the change log and webhooks) and what was
   * reverted (for the person).
   */
  review(tr: Y.Transaction, editor: Editor): GuardReport {
    const report: GuardReport = { editor, changes: [], events: [], reverts: [] }
    const touched = this.touched(tr)
    if (touched.length === 0) return report
    const now = this.now().toISOString()
    this.doc.transact(() => {
      for (const [root, key] of touched) {
        switch (root) {
          case 'tasks':
            this.reviewTask(key, editor, now, report)
            break
          case 'columns':
            this.reviewSimple(
              'columns',
              key,
              now,
              report,
              (k, v) => columnFieldError(k, v, this.maps),
              'column',
              'columns are deleted through the app, not by editing the board',
            )
            break
          case 'projects':
            this.reviewSimple(
              'projects',
              key,
              now,
              report,
              projectFieldError,
              undefined,
              'projects cannot be deleted here',
            )
            break
          case 'comments':
            this.reviewComment(key, editor, now, report)
            break
          case 'attachments':
          case 'claims':
            this.restore(root, key)
            report.reverts.push({ reason: `${root} are written by the server only` })
            break
        }
      }
    }, GUARD_ORIGIN)
    for (const [root, key] of touched) this.rememberOne(root, key)
    return report
  }

  /** Puts an entity back to its last valid state (re-creating it, or removing a new one). */
  private restore(root: string, key: string, textKeys: readonly string[] = []): void {
    const map = this.maps[root as keyof typeof this.maps] as Y.Map<unknown>
    const saved = this.last.get(root)?.get(key)
    const current = map.get(key)
    if (!saved) map.delete(key)
    else if (root === 'claims') map.set(key, saved.value)
    else if (current instanceof Y.Map) {
      for (const k of [...current.keys()]) if (!(k in saved)) current.delete(k)
      for (const [k, v] of Object.entries(saved)) this.setField(current, k, v, textKeys)
    } else map.set(key, rebuild(saved, textKeys))
  }

  private setField(m: Y.Map<unknown>, k: string, v: unknown, textKeys: readonly string[]): void {
    if (textKeys.includes(k)) {
      const text = m.get(k)
      if (text instanceof Y.Text) replaceText(text, String(v ?? ''))
      else m.set(k, new Y.Text(String(v ?? '')))
      return
    }
    if (JSON.stringify(m.get(k)) !== JSON.stringify(v)) m.set(k, v)
  }

  private reviewTask(taskId: string, editor: Editor, now: string, report: GuardReport): void {
    const m = this.maps.tasks.get(taskId)
    const saved = this.last.get('tasks')?.get(taskId)
    if (!m) {
      if (saved) {
        this.restore('tasks', taskId, ['description'])
        report.reverts.push({
          reason: 'cards are deleted through the app, not by editing the board',
          taskId,
        })
      }
      return
    }
    if (!saved) {
      // A new card: every field must be valid; the server stamps what it owns.
      const fields = snapshot(m)
      const problem = !UUID.test(taskId)
        ? 'card ids must be UUIDs'
        : ['columnId', 'title', 'position'].find((k) => !(k in fields))
          ? 'a new card needs columnId, title and position'
          : Object.entries(fields)
              .filter(([k]) => !(TASK_OWNED as readonly string[]).includes(k))
              .map(([k, v]) => taskFieldError(k, k === 'description' ? m.get(k) : v, this.maps))
              .find((e) => e !== undefined)
      if (problem) {
        this.maps.tasks.delete(taskId)
        report.reverts.push({ reason: `card not created: ${problem}`, taskId })
        return
      }
      if (!(m.get('description') instanceof Y.Text))
        m.set('description', new Y.Text(String(m.get('description') ?? '')))
      for (const [k, v] of [
        ['type', null],
        ['priority', null],
        ['projectId', null],
        ['tags', []],
        ['assigneeIds', []],
        ['archivedAt', null],
      ] as const) {
        if (!m.has(k)) m.set(k, v)
      }
      m.set('createdAt', now)
      m.set('updatedAt', now)
      m.set('createdByEmail', editor.email)
      report.changes.push({ kind: 'task', entityId: taskId })
      report.events.push({ type: 'card.created', data: { taskId } })
      return
    }
    const holder = this.heldBy(taskId, editor)
    if (holder) {
      this.restore('tasks', taskId, ['description'])
      report.reverts.push({
        reason: `this card is claimed by ${holder}; your change was undone`,
        taskId,
      })
      return
    }
    const current = snapshot(m)
    let accepted = false
    let refused: string | undefined
    for (const key of new Set([...Object.keys(saved), ...Object.keys(current)])) {
      if (JSON.stringify(saved[key]) === JSON.stringify(current[key])) continue
      const error = (TASK_OWNED as readonly string[]).includes(key)
        ? `${key} is set by the server`
        : key in current
          ? taskFieldError(key, key === 'description' ? m.get(key) : current[key], this.maps)
          : `${key} cannot be removed`
      if (error) {
        refused ??= error
        if (key in saved) this.setField(m, key, saved[key], ['description'])
        else m.delete(key)
      } else if (key !== 'updatedAt') {
        accepted = true
      }
    }
    if (refused) report.reverts.push({ reason: refused, taskId })
    if (!accepted) {
      if (JSON.stringify(saved.updatedAt) !== JSON.stringify(m.get('updatedAt')))
        m.set('updatedAt', saved.updatedAt)
      return
    }
    m.set('updatedAt', now)
    report.changes.push({ kind: 'task', entityId: taskId })
    if (saved.columnId !== m.get('columnId')) {
      const column = this.maps.columns.get(String(m.get('columnId')))
      report.events.push({
        type: 'card.moved',
        data: {
          taskId,
          fromColumnId: saved.columnId,
          toColumnId: m.get('columnId'),
          toColumnTitle: column?.get('title'),
        },
      })
    }
  }

  private reviewSimple(
    root: 'columns' | 'projects',
    key: string,
    now: string,
    report: GuardReport,
    fieldError: (k: string, v: unknown) => string | undefined,
    changeKind: ChangeKind | undefined,
    removalReason: string,
  ): void {
    const m = this.maps[root].get(key)
    const saved = this.last.get(root)?.get(key)
    if (!m) {
      if (saved) {
        this.restore(root, key)
        report.reverts.push({ reason: removalReason })
      }
      return
    }
    const current = snapshot(m)
    const problem = !UUID.test(key)
      ? 'ids must be UUIDs'
      : (Object.entries(current)
          .filter(([k, v]) => !saved || JSON.stringify(saved[k]) !== JSON.stringify(v))
          .map(([k, v]) => fieldError(k, v))
          .find((e) => e !== undefined) ??
        (saved
          ? Object.keys(saved).find((k) => !(k in current)) && 'fields cannot be removed'
          : undefined))
    if (problem) {
      this.restore(root, key)
      report.reverts.push({ reason: problem })
      return
    }
    if (!saved) m.set('createdAt', now)
    if (root === 'columns') m.set('updatedAt', now)
    if (changeKind) report.changes.push({ kind: changeKind, entityId: key })
  }

  private reviewComment(commentId: string, editor: Editor, now: string, report: GuardReport): void {
    const m = this.maps.comments.get(commentId)
    const saved = this.last.get('comments')?.get(commentId)
    if (!m) {
      if (saved) {
        this.restore('comments', commentId)
        report.reverts.push({
          reason: 'comments are deleted through the app, not by editing the board',
        })
      }
      return
    }
    const body = m.get('body')
    const bodyOk = len(body, LIMITS.commentBody.min, LIMITS.commentBody.max)
    if (!saved) {
      const taskId = m.get('taskId')
      if (!UUID.test(commentId) || !bodyOk || !isString(taskId) || !this.maps.tasks.has(taskId)) {
        this.maps.comments.delete(commentId)
        report.reverts.push({
          reason: `comment not added: the body must be 1–${LIMITS.commentBody.max} characters on an existing card`,
        })
        return
      }
      // Authorship comes from the session, never from the client.
      m.set('authorEmail', editor.email)
      m.set('agentName', null)
      m.set('createdAt', now)
      m.set('editedAt', null)
      for (const k of [...m.keys()])
        if (!['taskId', 'body', ...COMMENT_OWNED].includes(k)) m.delete(k)
      report.changes.push({ kind: 'comment', entityId: commentId })
      report.events.push({
        type: 'comment.added',
        data: { commentId, taskId, authorIsHuman: true },
      })
      return
    }
    const current = snapshot(m)
    const ownedChanged = (COMMENT_OWNED as readonly string[]).some(
      (k) => JSON.stringify(saved[k]) !== JSON.stringify(current[k]),
    )
    const bodyChanged = saved.body !== body
    if (
      saved.authorEmail !== editor.email ||
      ownedChanged ||
      !bodyOk ||
      Object.keys(current).some((k) => !(k in saved))
    ) {
      this.restore('comments', commentId)
      report.reverts.push({
        reason:
          saved.authorEmail !== editor.email
            ? 'only the author can edit a comment'
            : `a comment body is 1–${LIMITS.commentBody.max} characters`,
      })
      return
    }
    if (bodyChanged) {
      m.set('editedAt', now)
      report.changes.push({ kind: 'comment', entityId: commentId })
    }
  }
}
