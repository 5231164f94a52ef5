import type * as Y from 'yjs'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { mapDocName } from '../../shared/doc-names.ts'
import { mapDocMaps } from '../../shared/map-doc.ts'
import type { LiveDocs } from '../live/live-docs.ts'
import type { ExportLive } from './export.ts'

/**
 * What an export reads of the live documents, read on the thread that holds them. Apart
 * from export.ts, so that a transfer thread, which asks for these reads rather than making
 * them, does not load Yjs and the documents' shapes.
 */

type Json = Record<string, unknown>

/** A Y.Map of entries as sorted records. */
function entriesOf(m: Y.Map<Y.Map<unknown>>): ({ id: string } & Json)[] {
  return [...m.entries()]
    .map(([id, v]) => ({ id, ...(v.toJSON() as Json) }))
    .sort((a, b) => a.id.localeCompare(b.id))
}

/** The live documents of this process, read for an export. */
export function liveReads(live: LiveDocs): ExportLive {
  return {
    flushPeople: (orgId) => live.flushPeople(orgId),
    board: (orgId) =>
      live.read(boardDocName(orgId), (doc) => {
        const maps = boardMaps(doc)
        const meta = doc.getMap('meta').toJSON() as Json
        delete meta.generation
        return {
          meta,
          claims: maps.claims.toJSON() as Json,
          columns: entriesOf(maps.columns),
          projects: entriesOf(maps.projects),
          tasks: entriesOf(maps.tasks),
        }
      }),
    map: (orgId, mapId) =>
      live.read(mapDocName(orgId, mapId), (d) => {
        const m = mapDocMaps(d)
        const meta = m.meta.toJSON() as Json
        delete meta.generation
        return { meta, nodes: entriesOf(m.nodes), edges: entriesOf(m.edges) }
      }),
  }
}
