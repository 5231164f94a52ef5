import { randomUUID } from 'node:crypto'
import type * as Y from 'yjs'
import type { Db, Queryable } from '../../persistence/types.ts'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { mapDocName } from '../../shared/board-doc.ts'
import { isCanonicalUuid } from '../../shared/ids.ts'
import {
  type MapEdge,
  type MapNode,
  type MindMap,
  mapDocMaps,
  readEdge,
  readNode,
  type StoredNode,
} from '../../shared/map-doc.ts'
import type { Config } from '../config.ts'
import { badRequest, notFound } from '../errors.ts'
import { absoluteUrl } from '../files/links.ts'
import { deleteDoc } from '../live/doc-store.ts'
import type { WriteScope } from '../live/write-scope.ts'
import {
  decodeCursor,
  encodeCursor,
  fits,
  fittingCount,
  jsonLength,
  listPage,
  pageNote,
  roomFor,
} from './answer-budget.ts'
import type { ActionContext } from './context.ts'

/**
 * Mind maps. Each map is one live document (`<orgId>/maps/<mapId>`, docs/design.md Contract 3)
 * holding its title, nodes and edges; Postgres keeps the map list (`maps`) and an index of
 * which map holds each node and edge (`map_items`), both written in the same transaction
 * as the document change. Index rows stay when a node or edge is deleted (an undo on a
 * canvas can bring it back, and the document is what says whether it exists); they go
 * with their map.
 */

interface MapRow {
  id: string
  title: string
  created_at: Date
  updated_at: Date
}

const COLUMNS = 'id, title, created_at, updated_at'

function presentMap(row: MapRow): MindMap {
  return {
    id: row.id,
    title: row.title,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

const noMap = (mapId: string) => notFound(`No map with mapId ${mapId} in this organisation`)

/** The organisation's live (not deleted) map, or 404: missing, deleted and foreign look alike. */
async function findMap(q: Queryable, orgId: string, mapId: string): Promise<MindMap> {
  const [row] = await q.query<MapRow & Record<string, unknown>>(
    `select ${COLUMNS} from maps where id = $1 and org_id = $2 and deleted_at is null`,
    [mapId, orgId],
  )
  if (!row) throw noMap(mapId)
  return presentMap(row)
}

/** Whether a live connection may open this map's document (it exists and is not deleted). */
export async function mapIsLive(db: Db, orgId: string, mapId: string): Promise<boolean> {
  const rows = await db.query(
    'select 1 from maps where id = $1 and org_id = $2 and deleted_at is null',
    [mapId, orgId],
  )
  return rows.length > 0
}

/**
 * Runs a write on a map's document: 404 unless the map is live, then, inside the write's
 * transaction, locks the map's row (so a concurrent delete_map on any process waits or
 * wins) and moves its `updatedAt`, so the map list changes with the map.
 */
export async function writeMap<T>(
  ctx: ActionContext,
  mapId: string,
  fn: (w: WriteScope, map: MindMap) => Promise<T>,
): Promise<T> {
  const orgId = ctx.orgId
  // Checked first so a stale or foreign id never loads a document.
  await findMap(ctx.db, orgId, mapId)
  return ctx.write(mapDocName(orgId, mapId), async (w) => {
    // Locked below: an earlier write of the lane (people's edits of this map) may be
    // storing a change of this row, and would wait for this lock while this write waited
    // for its commit, until the lock timeout broke both.
    await w.earlierCommitted()
    const [row] = await w.tx.query<MapRow & Record<string, unknown>>(
      `update maps set updated_at = $3 where id = $1 and org_id = $2 and deleted_at is null
       returning ${COLUMNS}`,
      [mapId, orgId, w.now],
    )
    if (!row) throw noMap(mapId)
    w.afterCommit(() => ctx.live.mapsChanged(orgId))
    return fn(w, presentMap(row))
  })
}

export type ItemKind = 'node' | 'edge'

/** The live map holding a node or edge of this organisation, from the index. */
export async function mapOfItem(
  q: Queryable,
  orgId: string,
  id: string,
  kind: ItemKind,
): Promise<string | undefined> {
  const [row] = await q.query<{ map_id: string }>(
    `select i.map_id from map_items i join maps m on m.id = i.map_id
      where i.id = $1 and i.org_id = $2 and i.kind = $3 and m.deleted_at is null`,
    [id, orgId, kind],
  )
  return row?.map_id
}

/** Indexes new nodes or edges, in the write's transaction. */
export async function indexItems(
  tx: Queryable,
  orgId: string,
  mapId: string,
  kind: ItemKind,
  ids: readonly string[],
): Promise<void> {
  if (ids.length === 0) return
  const values: string[] = []
  const params: unknown[] = [orgId, mapId, kind]
  for (const id of ids) {
    params.push(id)
    values.push(`($${params.length}, $1, $2, $3)`)
  }
  await tx.query(
    `insert into map_items (id, org_id, map_id, kind) values ${values.join(', ')}
     on conflict (id) do nothing`,
    params,
  )
}

/** A node as returned: the stored image path made absolute when PUBLIC_URL is set. */
export function presentNode(config: Config, mapId: string, n: StoredNode): MapNode {
  const node: MapNode = { id: n.id, mapId, text: n.text, x: n.x, y: n.y, color: n.color }
  if (n.imageUrl) node.imageUrl = absoluteUrl(config, n.imageUrl)
  return node
}

export function presentEdge(mapId: string, e: ReturnType<typeof readEdge>): MapEdge {
  return { id: e.id, mapId, sourceId: e.sourceId, targetId: e.targetId }
}

/** list_maps: the organisation's maps, most recently changed first. */
export async function list_maps(
  ctx: ActionContext,
  input: ActionInput<'list_maps'>,
): Promise<ActionResults['list_maps']> {
  const rows = await ctx.db.query<MapRow & Record<string, unknown>>(
    `select ${COLUMNS} from maps where org_id = $1 and deleted_at is null
      order by updated_at desc, id`,
    [ctx.orgId],
  )
  const page = listPage({
    items: rows.map((r) => ({ id: r.id, title: r.title, updatedAt: r.updated_at.toISOString() })),
    query: 'list_maps',
    cursor: input.cursor,
    budget: ctx.budget,
    rest: { maps: [], nextCursor: null },
  })
  return {
    maps: page.items,
    ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
    ...(page.cut ? { note: pageNote(page, 'Maps', 'list_maps') } : {}),
  }
}

/** create_map: a new, empty map; its row and its document's title commit together. */
export async function create_map(
  ctx: ActionContext,
  input: ActionInput<'create_map'>,
): Promise<ActionResults['create_map']> {
  const orgId = ctx.orgId
  const id = randomUUID()
  return ctx.write(mapDocName(orgId, id), async (w) => {
    const [row] = await w.tx.query<MapRow & Record<string, unknown>>(
      `insert into maps (id, org_id, title, created_at, updated_at) values ($1, $2, $3, $4, $4)
       returning ${COLUMNS}`,
      [id, orgId, input.title, w.now],
    )
    w.mutate((doc) => mapDocMaps(doc).meta.set('title', input.title))
    w.afterCommit(() => ctx.live.mapsChanged(orgId))
    return { map: presentMap(row as MapRow) }
  })
}

/** rename_map: the list's title and the document's `meta.title` change together. */
export async function rename_map(
  ctx: ActionContext,
  input: ActionInput<'rename_map'>,
): Promise<ActionResults['rename_map']> {
  return writeMap(ctx, input.mapId, async (w, map) => {
    await w.tx.query('update maps set title = $2 where id = $1', [input.mapId, input.title])
    w.mutate((doc) => mapDocMaps(doc).meta.set('title', input.title))
    return { map: { ...map, title: input.title } }
  })
}

/**
 * Ids of each loaded map document known to be in the index (kept beside the live
 * document, so it goes when the document unloads). Index rows outlive deleted nodes and
 * edges, so an id once indexed stays indexed while its map exists.
 */
const indexedIds = new WeakMap<Y.Doc, Set<string>>()

/** get_map: the map with its nodes and edges, read from its live document. */
export async function get_map(
  ctx: ActionContext,
  input: ActionInput<'get_map'>,
): Promise<ActionResults['get_map']> {
  const orgId = ctx.orgId
  const map = await findMap(ctx.db, orgId, input.mapId)
  const content = await ctx.live.read(mapDocName(orgId, input.mapId), (doc) => {
    const { nodes, edges } = mapDocMaps(doc)
    let indexed = indexedIds.get(doc)
    if (!indexed) {
      indexed = new Set()
      indexedIds.set(doc, indexed)
    }
    const known = indexed
    const unseen = { node: [] as string[], edge: [] as string[] }
    const n: StoredNode[] = []
    const e: ReturnType<typeof readEdge>[] = []
    nodes.forEach((m, id) => {
      n.push(readNode(id, m))
      if (!known.has(id) && isCanonicalUuid(id)) unseen.node.push(id)
    })
    edges.forEach((m, id) => {
      e.push(readEdge(id, m))
      if (!known.has(id) && isCanonicalUuid(id)) unseen.edge.push(id)
    })
    return { nodes: n, edges: e, known, unseen }
  })
  await indexUnseen(ctx.db, orgId, input.mapId, content.unseen)
  for (const id of [...content.unseen.node, ...content.unseen.edge]) content.known.add(id)
  const answer: ActionResults['get_map'] = {
    map,
    nodes: content.nodes.map((n) => presentNode(ctx.config, input.mapId, n)),
    edges: content.edges.map((e) => presentEdge(input.mapId, e)),
  }
  const paged = input.limit !== undefined || input.cursor !== undefined
  return paged || !fits(ctx.budget, answer) ? mapPage(ctx, answer, input) : answer
}

/**
 * get_map in pages: the nodes, then the edges, each by id, after the cursor's item; at
 * most `limit`, and under a budget as many as fit. Pages of a map that stayed put give
 * every node and edge once; a node or edge is never cut in two.
 */
function mapPage(
  ctx: ActionContext,
  answer: ActionResults['get_map'],
  input: ActionInput<'get_map'>,
): ActionResults['get_map'] {
  type Item = { key: [number, string]; node?: MapNode; edge?: MapEdge }
  const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  const items: Item[] = [
    ...[...answer.nodes].sort(byId).map((node): Item => ({ key: [0, node.id], node })),
    ...[...answer.edges].sort(byId).map((edge): Item => ({ key: [1, edge.id], edge })),
  ]
  const query = ['get_map', input.mapId]
  let rest = items
  if (input.cursor !== undefined) {
    const [kind, id] = decodeCursor(input.cursor, query)
    if (typeof kind !== 'number' || typeof id !== 'string') {
      throw badRequest('cursor must be the nextCursor of a previous page, sent unchanged')
    }
    rest = items.filter((i) => i.key[0] > kind || (i.key[0] === kind && i.key[1] > id))
  }
  const limited = rest.slice(0, input.limit ?? rest.length)
  const room = ctx.budget
    ? roomFor(ctx.budget, { ...answer, nodes: [], edges: [], nextCursor: null })
    : Number.POSITIVE_INFINITY
  const n = fittingCount(limited, room, (i) => jsonLength(i.node ?? i.edge))
  const page = limited.slice(0, n)
  const last = page.at(-1)
  const out: ActionResults['get_map'] = {
    map: answer.map,
    nodes: page.flatMap((i) => (i.node ? [i.node] : [])),
    edges: page.flatMap((i) => (i.edge ? [i.edge] : [])),
    nextCursor: last && n < rest.length ? encodeCursor(query, last.key) : null,
  }
  if (n < limited.length) {
    out.note = `${out.nodes.length} nodes and ${out.edges.length} edges of ${answer.nodes.length} and ${answer.edges.length} fit the answer budget (nodes first, then edges): call get_map with this nextCursor for the next page, or export_map as markdown for an outline.`
  }
  return out
}

/**
 * Nodes and edges that people drew on the canvas reach the document without passing
 * through an action, so they are not yet in the index; the ids an agent reads here are
 * indexed now (ids already there are left alone), so update_node, delete_edge and the
 * rest find them. Each id is written at most once per loaded document.
 */
async function indexUnseen(
  db: Db,
  orgId: string,
  mapId: string,
  unseen: { node: string[]; edge: string[] },
): Promise<void> {
  if (unseen.node.length === 0 && unseen.edge.length === 0) return
  await db.transaction(async (tx) => {
    // One insert at a time: a transaction's statements run in order on one connection.
    await indexItems(tx, orgId, mapId, 'node', unseen.node)
    await indexItems(tx, orgId, mapId, 'edge', unseen.edge)
  })
}

/**
 * delete_map: permanent. The map leaves the list, its index rows and its stored document
 * updates go in one transaction, and live connections to it are closed (they cannot
 * reopen it: the sync authenticator refuses a deleted map). Published node images stay.
 */
export async function delete_map(
  ctx: ActionContext,
  input: ActionInput<'delete_map'>,
): Promise<ActionResults['delete_map']> {
  const orgId = ctx.orgId
  const name = mapDocName(orgId, input.mapId)
  await findMap(ctx.db, orgId, input.mapId)
  await ctx.write(name, async (w) => {
    // Locked below: people's edits of this map may be storing a change of its row (writeMap).
    await w.earlierCommitted()
    const rows = await w.tx.query(
      `update maps set deleted_at = $3, updated_at = $3
        where id = $1 and org_id = $2 and deleted_at is null returning id`,
      [input.mapId, orgId, w.now],
    )
    if (rows.length === 0) throw noMap(input.mapId)
    // Same lock as compaction, so a compaction in flight cannot write a snapshot back.
    await w.tx.query('select pg_advisory_xact_lock(hashtext($1))', [name])
    await w.tx.query('delete from map_items where map_id = $1', [input.mapId])
    await deleteDoc(w.tx, name)
    ctx.live.forgetDocument(name)
    // Only this document's connections, on every process: the socket stays open for the
    // person's other documents, and the provider is told why.
    w.afterCommit(() => {
      ctx.live.forgetDocument(name, { documentName: name })
      ctx.live.mapsChanged(orgId)
    })
  })
  return { ok: true as const }
}
