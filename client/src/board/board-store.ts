import type * as Y from 'yjs'
import {
  asStats,
  type BoardMaps,
  boardMaps,
  readColumn,
  readProject,
} from '../../../shared/board-doc.ts'
import { presentClaim, type StoredClaim } from '../../../shared/claims.ts'
import { PRIORITIES, type Priority, TASK_TYPES, type TaskType } from '../../../shared/constants.ts'
import {
  type DependencyBoard,
  docDependencyBoard,
  isBlocked,
  isOpen,
} from '../../../shared/dependencies.ts'
import type { ClaimRecord, Column, Project, TaskStats } from '../../../shared/records.ts'
import { str, strings, strOrNull } from '../../../shared/ymap-fields.ts'

/** What a card on the board shows: everything but the description, which only the card panel reads. */
export interface CardView {
  id: string
  columnId: string
  projectId: string | null
  title: string
  type: TaskType | null
  /** The card's own level; the board shows the effective one (on fire counts as high). */
  priority: Priority | null
  tags: readonly string[]
  assigneeIds: readonly string[]
  position: number
  createdAt: string
  updatedAt: string
  /** Set only between a person archiving the card and the server taking it off the board. */
  archivedAt: string | null
  createdByEmail: string
  /** Written by the server from the card's own document (comments, screenshots). */
  stats: TaskStats
  /** As of the last look at the clock: a lease past expiresAt shows as lapsed. */
  claim: ClaimRecord | null
  /** The cards this one waits for, as stored (some may have left the board). */
  blockedBy: readonly string[]
  /** At least one of `blockedBy` is open (shared/dependencies.ts). */
  blocked: boolean
}

/** The cards of one column in board order; `version` changes whenever any of them changes. */
export interface ColumnCards {
  ids: readonly string[]
  version: number
}

const EMPTY_CARDS: ColumnCards = { ids: [], version: 0 }

function oneOf<T extends string>(values: readonly T[], v: unknown): T | null {
  return typeof v === 'string' && (values as readonly string[]).includes(v) ? (v as T) : null
}

/** A claim as the server projects it, checked field by field: the document is wire data too. */
export function asStoredClaim(v: unknown): StoredClaim | undefined {
  if (typeof v !== 'object' || v === null) return undefined
  const c = v as Record<string, unknown>
  const s = (k: string) => (typeof c[k] === 'string' ? (c[k] as string) : null)
  const taskId = s('taskId')
  const expiresAt = s('expiresAt')
  if (!taskId || !expiresAt) return undefined
  return {
    taskId,
    keyId: s('keyId') ?? '',
    agentName: s('agentName'),
    house: s('house'),
    generation: typeof c.generation === 'number' ? c.generation : null,
    isSubChild: c.isSubChild === true,
    status: c.status === 'lapsed' ? 'lapsed' : 'working',
    note: s('note'),
    startedAt: s('startedAt') ?? '',
    updatedAt: s('updatedAt') ?? '',
    expiresAt,
    isLive: c.isLive === true,
    holder: s('holder') ?? '',
    releasedAt: s('releasedAt'),
  }
}

function byPosition(a: { position: number; id: string }, b: { position: number; id: string }) {
  return a.position - b.position || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
}

/**
 * An index of the board document for the UI, updated incrementally from Yjs events and
 * subscribed to narrowly: a change to one card notifies that card and its column, nothing
 * else, so a board of thousands of cards re-renders only what changed.
 *
 * Topics: `card:<id>`, `cards:<columnId>` (membership, order or any card's data),
 * `columns`, `projects`, `tags`, `layout`, `deps:<id>` (a card it waits for or one waiting
 * for it changed, or joined or left either list: what the card panel's dependency
 * sections show). The board document holds the cards on the board
 * only: archived cards are listed through the app API, comments and screenshots live in
 * each card's own document (card-store.ts).
 */
export class BoardStore {
  readonly doc: Y.Doc
  readonly maps: BoardMaps
  private readonly cards = new Map<string, CardView>()
  private readonly columnCards = new Map<string, ColumnCards>()
  private columnList: readonly Column[] = []
  private readonly columnById = new Map<string, Column>()
  private projectList: readonly Project[] = []
  private readonly projectById = new Map<string, Project>()
  private tagList: readonly string[] | undefined
  private readonly listeners = new Map<string, Set<() => void>>()
  private expiryTimer: ReturnType<typeof setTimeout> | undefined
  private layoutVersion = 0
  private readonly unobserve: (() => void)[] = []
  private readonly dependencies: DependencyBoard
  /** Blocker id → the cards on the board waiting for it (the blocker may be off the board). */
  private readonly waiting = new Map<string, Set<string>>()
  private readonly depsVersions = new Map<string, number>()

  constructor(doc: Y.Doc) {
    this.doc = doc
    this.maps = boardMaps(doc)
    this.dependencies = docDependencyBoard(this.maps)
    this.rebuildColumns()
    this.rebuildProjects()
    this.readAllCards()
    this.scheduleExpiry()
    this.observe()
  }

  // ---- reading --------------------------------------------------------------------------

  card(id: string): CardView | undefined {
    return this.cards.get(id)
  }

  cardsOf(columnId: string): ColumnCards {
    return this.columnCards.get(columnId) ?? EMPTY_CARDS
  }

  columns(): readonly Column[] {
    return this.columnList
  }

  column(id: string): Column | undefined {
    return this.columnById.get(id)
  }

  projects(): readonly Project[] {
    return this.projectList
  }

  project(id: string | null): Project | undefined {
    return id ? this.projectById.get(id) : undefined
  }

  /** Every tag in use on the board (not archived), case-insensitively unique, sorted. */
  tags(): readonly string[] {
    if (!this.tagList) {
      const seen = new Map<string, string>()
      for (const c of this.cards.values()) {
        if (c.archivedAt) continue
        for (const t of c.tags) if (!seen.has(t.toLowerCase())) seen.set(t.toLowerCase(), t)
      }
      this.tagList = [...seen.values()].sort((a, b) => a.localeCompare(b))
    }
    return this.tagList
  }

  /** Changes whenever a card joins, leaves or moves between columns (topic `layout`). */
  layout(): number {
    return this.layoutVersion
  }

  /** Every card on the board (for a column's delete dialog, project filters). */
  allCards(): IterableIterator<CardView> {
    return this.cards.values()
  }

  /** The cards on the board that wait for this one (what it blocks), in board order. */
  blocks(taskId: string): string[] {
    const ids = [...(this.waiting.get(taskId) ?? [])].filter((id) => this.cards.has(id))
    const order = new Map(this.columnList.map((c, i) => [c.id, i]))
    const at = (id: string) => {
      const c = this.cards.get(id) as CardView
      return [order.get(c.columnId) ?? order.size, c.position] as const
    }
    return ids.sort((a, b) => {
      const [ca, pa] = at(a)
      const [cb, pb] = at(b)
      return ca - cb || pa - pb || (a < b ? -1 : 1)
    })
  }

  /** Open: on the board and not in a `done` column (a blocker that holds its dependents). */
  isOpen(taskId: string): boolean {
    return isOpen(this.dependencies, taskId)
  }

  /** The board as the dependency rules read it (shared/dependencies.ts). */
  dependencyBoard(): DependencyBoard {
    return this.dependencies
  }

  /** Changes whenever the card's dependency sections would show something else (topic `deps:<id>`). */
  depsVersion(taskId: string): number {
    return this.depsVersions.get(taskId) ?? 0
  }

  // ---- subscribing ----------------------------------------------------------------------

  subscribe(topic: string, fn: () => void): () => void {
    let set = this.listeners.get(topic)
    if (!set) {
      set = new Set()
      this.listeners.set(topic, set)
    }
    set.add(fn)
    return () => {
      set.delete(fn)
      if (set.size === 0) this.listeners.delete(topic)
    }
  }

  private emit(topics: Iterable<string>) {
    for (const t of topics) {
      const set = this.listeners.get(t)
      if (set) for (const fn of [...set]) fn()
    }
  }

  // ---- keeping up with the document ------------------------------------------------------

  private readCard(id: string): CardView | undefined {
    const m = this.maps.tasks.get(id)
    if (!m) return undefined
    const stored = asStoredClaim(this.maps.claims.get(id))
    const position = m.get('position')
    const blockedBy = strings(m, 'blockedBy')
    return {
      id,
      columnId: str(m, 'columnId'),
      projectId: strOrNull(m, 'projectId'),
      title: str(m, 'title'),
      type: oneOf(TASK_TYPES, m.get('type')),
      priority: oneOf(PRIORITIES, m.get('priority')),
      tags: strings(m, 'tags'),
      assigneeIds: strings(m, 'assigneeIds'),
      position: typeof position === 'number' && Number.isFinite(position) ? position : 0,
      createdAt: str(m, 'createdAt'),
      updatedAt: str(m, 'updatedAt'),
      archivedAt: strOrNull(m, 'archivedAt'),
      createdByEmail: str(m, 'createdByEmail'),
      stats: asStats(m.get('stats')),
      claim: stored ? presentClaim(stored, Date.now()) : null,
      blockedBy,
      blocked: isBlocked(this.dependencies, blockedBy),
    }
  }

  /** Keeps the waiting index in step with a card's `blockedBy`. */
  private index(id: string, before: readonly string[], after: readonly string[]) {
    for (const b of before) {
      if (after.includes(b)) continue
      const set = this.waiting.get(b)
      set?.delete(id)
      if (set?.size === 0) this.waiting.delete(b)
    }
    for (const b of after) {
      let set = this.waiting.get(b)
      if (!set) {
        set = new Set()
        this.waiting.set(b, set)
      }
      set.add(id)
    }
  }

  private touchDeps(id: string, topics: Set<string>) {
    this.depsVersions.set(id, (this.depsVersions.get(id) ?? 0) + 1)
    topics.add(`deps:${id}`)
  }

  /**
   * Re-reads whether these cards are blocked (a blocker of theirs opened or closed) and
   * notifies the ones whose answer changed. Nothing else of them changed, so only
   * `blocked` is rewritten.
   */
  private recheckBlocked(ids: Iterable<string>, topics: Set<string>, bump: Set<string>) {
    for (const id of ids) {
      const card = this.cards.get(id)
      if (!card) continue
      this.touchDeps(id, topics)
      const blocked = isBlocked(this.dependencies, card.blockedBy)
      if (blocked === card.blocked) continue
      this.cards.set(id, { ...card, blocked })
      topics.add(`card:${id}`)
      bump.add(card.columnId)
    }
  }

  /**
   * Reads every card of the document into a store that holds none, and orders every column
   * in one pass: how a board is read when it arrives whole (the first sync, or the copy on
   * this device), rather than card by card as edits are.
   */
  private readAllCards() {
    const byColumn = new Map<string, CardView[]>()
    this.maps.tasks.forEach((_m, id) => {
      const card = this.readCard(id)
      if (!card) return
      this.cards.set(id, card)
      this.index(id, [], card.blockedBy)
      if (card.archivedAt) return
      const list = byColumn.get(card.columnId)
      if (list) list.push(card)
      else byColumn.set(card.columnId, [card])
    })
    for (const [columnId, list] of byColumn) {
      list.sort(byPosition)
      const version = (this.columnCards.get(columnId)?.version ?? 0) + 1
      this.columnCards.set(columnId, { ids: list.map((c) => c.id), version })
    }
  }

  /**
   * The whole board arrived into a store that held no card: read it at once, and notify
   * every column, the layout and the tags, and whoever already listens to a card or its
   * dependency sections (nothing else has been shown yet).
   */
  private loadAllCards() {
    this.readAllCards()
    this.tagList = undefined
    this.layoutVersion += 1
    const topics = new Set<string>(['tags', 'layout'])
    for (const columnId of this.columnCards.keys()) topics.add(`cards:${columnId}`)
    for (const topic of this.listeners.keys()) {
      if (topic.startsWith('card:')) topics.add(topic)
      else if (topic.startsWith('deps:')) this.touchDeps(topic.slice('deps:'.length), topics)
    }
    this.emit(topics)
  }

  private sortColumn(columnId: string) {
    const list: CardView[] = []
    for (const c of this.cards.values()) {
      if (c.columnId === columnId && !c.archivedAt) list.push(c)
    }
    list.sort(byPosition)
    const version = (this.columnCards.get(columnId)?.version ?? 0) + 1
    this.columnCards.set(columnId, { ids: list.map((c) => c.id), version })
  }

  private bumpColumn(columnId: string) {
    const current = this.columnCards.get(columnId) ?? EMPTY_CARDS
    this.columnCards.set(columnId, { ids: current.ids, version: current.version + 1 })
  }

  /** Re-reads these cards and notifies exactly the topics whose answer changed. */
  private refreshCards(ids: Iterable<string>) {
    const topics = new Set<string>()
    const resort = new Set<string>()
    const bump = new Set<string>()
    const refreshed = new Set(ids)
    const recheck = new Set<string>()
    for (const id of refreshed) {
      const before = this.cards.get(id)
      const after = this.readCard(id)
      if (after) this.cards.set(id, after)
      else this.cards.delete(id)
      topics.add(`card:${id}`)
      // Its own sections, the sections of the cards it waits for (their "Blocks" list
      // shows it) and those of the cards waiting for it, whose blocked may change too.
      this.index(id, before?.blockedBy ?? [], after?.blockedBy ?? [])
      this.touchDeps(id, topics)
      for (const b of new Set([...(before?.blockedBy ?? []), ...(after?.blockedBy ?? [])]))
        this.touchDeps(b, topics)
      for (const w of this.waiting.get(id) ?? []) if (!refreshed.has(w)) recheck.add(w)
      if (!before || !after) {
        if (before) resort.add(before.columnId)
        if (after) resort.add(after.columnId)
        this.tagList = undefined
        topics.add('tags')
        continue
      }
      if (
        before.columnId !== after.columnId ||
        before.position !== after.position ||
        before.archivedAt !== after.archivedAt
      ) {
        resort.add(before.columnId)
        resort.add(after.columnId)
      } else bump.add(after.columnId)
      if (before.archivedAt !== after.archivedAt) {
        this.tagList = undefined
        topics.add('tags')
      }
      if (before.tags !== after.tags && before.tags.join('\n') !== after.tags.join('\n')) {
        this.tagList = undefined
        topics.add('tags')
      }
    }
    this.recheckBlocked(recheck, topics, bump)
    for (const c of resort) {
      this.sortColumn(c)
      topics.add(`cards:${c}`)
    }
    if (resort.size > 0) {
      this.layoutVersion += 1
      topics.add('layout')
    }
    for (const c of bump) {
      if (resort.has(c)) continue
      this.bumpColumn(c)
      topics.add(`cards:${c}`)
    }
    this.emit(topics)
  }

  private rebuildColumns() {
    const list: Column[] = []
    this.maps.columns.forEach((m, id) => {
      list.push(readColumn(id, m))
    })
    list.sort(byPosition)
    this.columnList = list
    this.columnById.clear()
    for (const c of list) this.columnById.set(c.id, c)
  }

  private rebuildProjects() {
    const list: Project[] = []
    this.maps.projects.forEach((m, id) => {
      list.push(readProject(id, m))
    })
    list.sort((a, b) => a.name.localeCompare(b.name))
    this.projectList = list
    this.projectById.clear()
    for (const p of list) this.projectById.set(p.id, p)
  }

  private observe() {
    const { tasks, columns, projects, claims } = this.maps
    const onTasks = (events: Y.YEvent<Y.AbstractType<unknown>>[]) => {
      const dirty = new Set<string>()
      for (const e of events) {
        if (e.target === tasks) {
          for (const key of e.changes.keys.keys()) dirty.add(key)
          continue
        }
        const [id, field] = e.path
        // Typing in a description changes nothing the board shows.
        if (typeof id === 'string' && field !== 'description') dirty.add(id)
      }
      if (dirty.size === 0) return
      if (this.cards.size === 0) this.loadAllCards()
      else this.refreshCards(dirty)
    }
    tasks.observeDeep(onTasks)
    this.unobserve.push(() => tasks.unobserveDeep(onTasks))

    const onColumns = () => {
      const before = this.columnById
      const old = new Map(before)
      this.rebuildColumns()
      const topics = new Set<string>(['columns'])
      const bump = new Set<string>()
      let roles = old.size !== this.columnList.length
      for (const c of this.columnList) {
        const was = old.get(c.id)
        // Fire changes every card's effective priority in the column.
        if (!was || was.onFire !== c.onFire) bump.add(c.id)
        if (!was || was.role !== c.role || was.title !== c.title) roles = true
      }
      // A column becoming (or ceasing to be) done opens or closes every blocker in it; a
      // new title shows in the dependency sections.
      if (roles) {
        const involved = new Set<string>()
        for (const [blocker, waiting] of this.waiting) {
          involved.add(blocker)
          for (const w of waiting) involved.add(w)
        }
        this.recheckBlocked(involved, topics, bump)
        for (const id of involved) if (!this.cards.has(id)) this.touchDeps(id, topics)
      }
      for (const c of bump) {
        this.bumpColumn(c)
        topics.add(`cards:${c}`)
      }
      this.emit(topics)
    }
    columns.observeDeep(onColumns)
    this.unobserve.push(() => columns.unobserveDeep(onColumns))

    const onProjects = () => {
      this.rebuildProjects()
      // Project chips on cards read names and colours from here.
      const topics = new Set<string>(['projects'])
      for (const c of this.columnList) {
        this.bumpColumn(c.id)
        topics.add(`cards:${c.id}`)
      }
      this.emit(topics)
    }
    projects.observeDeep(onProjects)
    this.unobserve.push(() => projects.unobserveDeep(onProjects))

    const onClaims = (e: Y.YMapEvent<ClaimRecord>) => {
      // A card not read yet arrived in this same transaction: reading it reads its claim.
      this.refreshCards([...e.keysChanged].filter((id) => this.cards.has(id)))
      this.scheduleExpiry()
    }
    claims.observe(onClaims)
    this.unobserve.push(() => claims.unobserve(onClaims))
  }

  /**
   * A claim lapses when its lease passes, and nothing is written then: re-read the cards
   * whose leases end, at the moment they end, so the board shows them as lapsed.
   */
  private scheduleExpiry() {
    if (this.expiryTimer) clearTimeout(this.expiryTimer)
    this.expiryTimer = undefined
    const now = Date.now()
    let soonest = Number.POSITIVE_INFINITY
    this.maps.claims.forEach((v) => {
      const c = asStoredClaim(v)
      if (!c || c.releasedAt) return
      const t = Date.parse(c.expiresAt)
      if (t > now && t < soonest) soonest = t
    })
    if (!Number.isFinite(soonest)) return
    // setTimeout caps at ~24.8 days; a longer lease is simply checked again later.
    const wait = Math.min(soonest - now + 50, 2 ** 31 - 1)
    this.expiryTimer = setTimeout(() => {
      const due: string[] = []
      for (const card of this.cards.values()) {
        if (card.claim?.isLive && Date.parse(card.claim.expiresAt) <= Date.now()) due.push(card.id)
      }
      this.refreshCards(due)
      this.scheduleExpiry()
    }, wait)
  }

  destroy(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer)
    for (const u of this.unobserve) u()
    this.listeners.clear()
  }
}
