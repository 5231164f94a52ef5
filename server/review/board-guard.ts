import type * as Y from 'yjs'
import { boardMaps, readStoredTask } from '../../shared/board-doc.ts'
import { COLUMN_ROLES, HEX_COLOR, LIMITS, PRIORITIES, TASK_TYPES } from '../../shared/constants.ts'
import {
  type DependencyBoard,
  dependencyProblem,
  describeDependencyProblem,
  docDependencyBoard,
  isOpen,
} from '../../shared/dependencies.ts'
import { isUuid } from '../../shared/ids.ts'
import type { Revert } from '../../shared/live-protocol.ts'
import { EMPTY_STATS } from '../../shared/records.ts'
import { archivedRow } from '../board/archive.ts'
import { blockingChanges } from '../board/blockers.ts'
import { boardIndex } from '../board/board-index.ts'
import type { ChangeKind, DomainEvent } from '../live/events.ts'
import { GUARD_ORIGIN } from '../live/origins.ts'
import type { RowOp } from '../live/write-record.ts'
import {
  type Editor,
  GENERATION_IS_THE_SERVERS,
  LastValid,
  same,
  setField,
  snapshot,
} from './guard-kit.ts'

/**
 * Holds people's live edits of a board document to the rules agents obey: values outside
 * the specification's limits, writes to server-owned fields (`claims`, a card's `stats`,
 * `createdAt`, `createdByEmail`), removals, and any edit of a card another actor holds are
 * put back to the last valid state. Valid edits are stamped (`updatedAt`) and reported as
 * change rows and events, like an agent's. A person who archives a card (sets `archivedAt`)
 * sees it leave the board in the same compensating transaction, as archive_task does.
 */

/** The holder's label while a live claim of someone other than `editor` holds the card. */
export function claimHolder(
  claims: { get(taskId: string): unknown },
  taskId: string,
  editor: Editor,
  now: number,
): string | undefined {
  const claim = claims.get(taskId) as Record<string, unknown> | undefined
  if (!claim || claim.releasedAt || Date.parse(String(claim.expiresAt)) <= now) return undefined
  if (editor.keyId && claim.keyId === editor.keyId) return undefined
  return String(claim.holder ?? 'an agent')
}

export interface BoardReport {
  changes: { kind: ChangeKind; entityId: string }[]
  events: DomainEvent[]
  /** Rows the edit puts into the history tables (an archived card). */
  ops: RowOp[]
  /** Why parts of the edit were undone, for the person who made it. */
  reverts: Revert[]
}

type Maps = ReturnType<typeof boardMaps>

const TASK_OWNED = ['createdAt', 'createdByEmail', 'stats'] as const
/** Card fields that are Y.Texts on the board: none since version 3 (the description moved). */
const TEXT_KEYS = [] as const

const isString = (v: unknown): v is string => typeof v === 'string'
const nullableOf = (v: unknown, values: readonly string[]) =>
  v === null || v === undefined || values.includes(v as string)
const len = (v: unknown, min: number, max: number) =>
  isString(v) && v.length >= min && v.length <= max
const finite = (v: unknown) => typeof v === 'number' && Number.isFinite(v)

/** The first rule a card field breaks, or undefined. */
function taskFieldError(key: string, v: unknown, maps: Maps): string | undefined {
  switch (key) {
    case 'title':
      return len(v, LIMITS.taskTitle.min, LIMITS.taskTitle.max)
        ? undefined
        : `title must be 1–${LIMITS.taskTitle.max} characters`
    case 'description':
      return "a card's description lives in its own document (<orgId>/tasks/<taskId>), not on the board"
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
      return Array.isArray(v) && v.every(isUuid) ? undefined : 'assigneeIds must be a list of ids'
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
    case 'blockedBy':
      // Checked with the card it belongs to: BoardGuard.blockedByError.
      return undefined
    default:
      return `cards have no field ${key}`
  }
}

function columnFieldError(key: string, v: unknown, maps: Maps): string | undefined {
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
      return isString(v) && HEX_COLOR.test(v) ? undefined : 'color must be a # hex colour'
    case 'createdAt':
      return undefined
    default:
      return `projects have no field ${key}`
  }
}

export class BoardGuard {
  private readonly doc: Y.Doc
  private readonly maps: Maps
  private readonly last: LastValid
  private readonly now: () => Date

  constructor(doc: Y.Doc, now: () => Date = () => new Date()) {
    this.doc = doc
    this.now = now
    this.maps = boardMaps(doc)
    // `meta` holds the document's generation (shared/rebase.ts): the server's alone.
    this.last = new LastValid({ ...this.maps, meta: doc.getMap('meta') })
  }

  /** Records the new valid state after a transaction the server made or accepted. */
  remember(tr: Y.Transaction): void {
    this.last.rememberAll(tr)
  }

  /** The holder's label while a live claim of someone other than this editor holds the card. */
  heldBy(taskId: string, editor: Editor): string | undefined {
    return claimHolder(this.maps.claims, taskId, editor, this.now().getTime())
  }

  /**
   * Checks a person's transaction and compensates what is not allowed, in one server
   * transaction. Returns what was accepted (for the change log, history and webhooks) and
   * what was reverted (for the person).
   */
  review(tr: Y.Transaction, editor: Editor): BoardReport {
    const report: BoardReport = { changes: [], events: [], ops: [], reverts: [] }
    const touched = this.last.touched(tr)
    const now = this.now().toISOString()
    this.doc.transact(() => {
      if (this.last.clearStray(this.doc, tr) > 0) {
        report.reverts.push({ reason: 'the board holds only columns, projects, cards and claims' })
      }
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
          case 'claims':
            this.last.restore('claims', key)
            report.reverts.push({ reason: 'claims are written by the server only' })
            break
          case 'meta':
            this.last.restore('meta', key)
            report.reverts.push({ reason: GENERATION_IS_THE_SERVERS })
            break
        }
      }
      this.followBlockers(touched, report)
    }, GUARD_ORIGIN)
    for (const [root, key] of touched) this.last.remember(root, key)
    return report
  }

  /**
   * The rules of set_task_dependencies for a person's `blockedBy` (the action's words): card
   * ids without repeats, at most 50, not the card itself, closing no cycle through the
   * board, each a card on the board, or one the list held already (a blocker archived since
   * stays; the board document does not know the archive, and the revert path has no await).
   */
  private blockedByError(taskId: string, v: unknown, kept: unknown): string | undefined {
    if (!Array.isArray(v) || !v.every((id) => isUuid(id) && id === id.toLowerCase()))
      return 'blockedBy must be a list of card ids'
    if (new Set(v).size !== v.length) return 'blockedBy must not repeat a card'
    const before = new Set(Array.isArray(kept) ? kept : [])
    const board = docDependencyBoard(this.maps)
    const problem = dependencyProblem(board, taskId, v)
    if (problem) {
      return describeDependencyProblem(problem, (id) => {
        const title = this.maps.tasks.get(id)?.get('title')
        return typeof title === 'string' ? `"${title}"` : id
      })
    }
    const unknown = v.find((id) => !this.maps.tasks.has(id) && !before.has(id))
    return unknown ? `blockedBy holds ${unknown}, which is not a card on the board` : undefined
  }

  /**
   * Blockers this edit closed or reopened (a card moved into or out of a done column,
   * archived, a column's role changed): the cards waiting for them whose `blocked` moved are
   * changes of this edit too, and those whose last open blocker closed raise card.unblocked,
   * as for an agent's write (board/blockers.ts).
   */
  private followBlockers(touched: [string, string][], report: BoardReport): void {
    const index = boardIndex(this.doc)
    const columnTouched = touched.some(([root]) => root === 'columns')
    const blockers = columnTouched
      ? index.blockers()
      : touched.filter(([root]) => root === 'tasks').map(([, key]) => key)
    if (blockers.length === 0) return
    const after = docDependencyBoard(this.maps)
    const before: DependencyBoard = {
      columnOf: (id) => {
        const saved = this.last.get('tasks', id)
        return saved && typeof saved.columnId === 'string' ? saved.columnId : undefined
      },
      roleOf: (id) => {
        const saved = this.last.get('columns', id)
        return saved ? ((saved.role as string | null | undefined) ?? null) : undefined
      },
      blockersOf: () => [],
    }
    const list = (v: unknown) => (Array.isArray(v) ? v.filter(isString) : [])
    const { changed, unblocked } = blockingChanges({
      blockers,
      openBefore: (id) => isOpen(before, id),
      openAfter: (id) => isOpen(after, id),
      dependentsOf: (id) => index.dependents(id),
      blockedByBefore: (id) => list(this.last.get('tasks', id)?.blockedBy),
      blockedByAfter: (id) => {
        const m = this.maps.tasks.get(id)
        return m ? list(m.get('blockedBy')) : undefined
      },
    })
    for (const id of changed) report.changes.push({ kind: 'task', entityId: id })
    for (const id of unblocked) report.events.push({ type: 'card.unblocked', data: { taskId: id } })
  }

  private reviewTask(taskId: string, editor: Editor, now: string, report: BoardReport): void {
    const m = this.maps.tasks.get(taskId)
    const saved = this.last.get('tasks', taskId)
    if (!m) {
      if (saved) {
        this.last.restore('tasks', taskId, TEXT_KEYS)
        report.reverts.push({
          reason: 'cards are archived or deleted through the app, not removed from the board',
          taskId,
        })
      }
      return
    }
    if (!saved) {
      this.reviewNewTask(taskId, m, editor, now, report)
      return
    }
    const holder = this.heldBy(taskId, editor)
    if (holder) {
      this.last.restore('tasks', taskId, TEXT_KEYS)
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
      if (same(saved[key], current[key])) continue
      const error = (TASK_OWNED as readonly string[]).includes(key)
        ? `${key} is set by the server`
        : key === 'blockedBy' && key in current
          ? this.blockedByError(taskId, current[key], saved.blockedBy)
          : key in current
            ? taskFieldError(key, current[key], this.maps)
            : `${key} cannot be removed`
      if (error) {
        refused ??= error
        if (key in saved) setField(m, key, saved[key], TEXT_KEYS)
        else m.delete(key)
      } else if (key !== 'updatedAt') {
        accepted = true
      }
    }
    if (refused) report.reverts.push({ reason: refused, taskId })
    if (!accepted) {
      if (!same(saved.updatedAt, m.get('updatedAt'))) m.set('updatedAt', saved.updatedAt)
      return
    }
    if (saved.archivedAt == null && m.get('archivedAt') != null) {
      this.archive(taskId, m, now, report)
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

  /** A new card: every field must be valid; the server stamps what it owns. */
  private reviewNewTask(
    taskId: string,
    m: Y.Map<unknown>,
    editor: Editor,
    now: string,
    report: BoardReport,
  ): void {
    const fields = snapshot(m)
    const problem = !isUuid(taskId)
      ? 'card ids must be UUIDs'
      : ['columnId', 'title', 'position'].find((k) => !(k in fields))
        ? 'a new card needs columnId, title and position'
        : Object.entries(fields)
            .filter(([k]) => !(TASK_OWNED as readonly string[]).includes(k))
            .map(([k, v]) =>
              k === 'blockedBy'
                ? this.blockedByError(taskId, v, [])
                : taskFieldError(k, v, this.maps),
            )
            .find((e) => e !== undefined)
    if (problem) {
      this.maps.tasks.delete(taskId)
      report.reverts.push({ reason: `card not created: ${problem}`, taskId })
      return
    }
    for (const [k, v] of [
      ['type', null],
      ['priority', null],
      ['projectId', null],
      ['tags', []],
      ['assigneeIds', []],
    ] as const) {
      if (!m.has(k)) m.set(k, v)
    }
    // Cards are created on the board; archiving is a change of its own.
    if (m.get('archivedAt') !== null) m.set('archivedAt', null)
    m.set('createdAt', now)
    m.set('updatedAt', now)
    m.set('createdByEmail', editor.email)
    m.set('stats', EMPTY_STATS)
    report.changes.push({ kind: 'task', entityId: taskId })
    report.events.push({ type: 'card.created', data: { taskId } })
  }

  /** The card leaves the board (and its claim entry with it); its record goes to history. */
  private archive(taskId: string, m: Y.Map<unknown>, now: string, report: BoardReport): void {
    const task = { ...readStoredTask(taskId, m), archivedAt: now, updatedAt: now }
    this.maps.tasks.delete(taskId)
    if (this.maps.claims.has(taskId)) this.maps.claims.delete(taskId)
    report.ops.push({ t: 'archived', id: taskId, rec: archivedRow(task) })
    report.changes.push({ kind: 'task', entityId: taskId })
  }

  private reviewSimple(
    root: 'columns' | 'projects',
    key: string,
    now: string,
    report: BoardReport,
    fieldError: (k: string, v: unknown) => string | undefined,
    changeKind: ChangeKind | undefined,
    removalReason: string,
  ): void {
    const m = this.maps[root].get(key)
    const saved = this.last.get(root, key)
    if (!m) {
      if (saved) {
        this.last.restore(root, key)
        report.reverts.push({ reason: removalReason })
      }
      return
    }
    const current = snapshot(m)
    const problem = !isUuid(key)
      ? 'ids must be UUIDs'
      : (Object.entries(current)
          .filter(([k, v]) => !saved || !same(saved[k], v))
          .map(([k, v]) => fieldError(k, v))
          .find((e) => e !== undefined) ??
        (saved
          ? Object.keys(saved).find((k) => !(k in current)) && 'fields cannot be removed'
          : undefined))
    if (problem) {
      this.last.restore(root, key)
      report.reverts.push({ reason: problem })
      return
    }
    if (!saved) m.set('createdAt', now)
    if (root === 'columns') m.set('updatedAt', now)
    if (changeKind) report.changes.push({ kind: changeKind, entityId: key })
  }
}
