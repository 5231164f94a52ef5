import { actions } from '../../../shared/actions.ts'
import { mapDocName } from '../../../shared/board-doc.ts'
import { mapDocMaps } from '../../../shared/map-doc.ts'
import { EXPORT_TYPES, exportBytes, readMapContent } from '../../actions/map-export.ts'
import { indexItems, mapIsLive } from '../../actions/maps.ts'
import { run } from '../../actions/perform.ts'
import { parseParams } from '../../actions/validation.ts'
import { notFound } from '../../errors.ts'
import { answer } from '../../http/route-docs.ts'
import { type AppRouter, bodyObject, bodyOf, pathId, queryOf } from './route.ts'

/** A map's title as a file name: what a file system refuses out, at most 100 characters. */
function mapFileName(title: string, extension: string): string {
  const base = title
    .replace(/[\p{Cc}<>:"/\\|?*]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^\.+/, '')
  const short = Array.from(base).slice(0, 100).join('').trim()
  return `${short || 'map'}.${extension}`
}

/** Mind maps and node images as a person: the map actions' handlers, through the same pipeline. */
export function mapRoutes(app: AppRouter): void {
  const { db, live } = app.deps

  /** The organisation's mind maps, most recently changed first (list_maps). */
  app.org(
    'GET',
    '/maps',
    {
      summary: "The organisation's mind maps, as list_maps",
      access: 'member',
      answers: [answer.json(200, 'Most recently changed first.', actions.list_maps.output)],
    },
    async (_req, { user, org }) => ({
      status: 200,
      body: await run(app.deps, {
        action: 'list_maps',
        input: {},
        caller: app.caller({ user, org }),
      }),
    }),
  )

  /** A new, empty map (create_map). */
  app.org(
    'POST',
    '/maps',
    {
      summary: 'A new, empty mind map, as create_map',
      access: 'member',
      body: actions.create_map.input,
      answers: [answer.json(201, 'The new map.', actions.create_map.output)],
    },
    async (req, { user, org }) => {
      const input = await bodyOf(req, 'create map', actions.create_map.input)
      return {
        status: 201,
        body: await run(app.deps, {
          action: 'create_map',
          input,
          caller: app.caller({ user, org }),
        }),
      }
    },
  )

  /** Renames a map: the list and the document's title together (rename_map). */
  app.org(
    'PATCH',
    '/maps/:mapId',
    {
      summary: 'Rename a map, as rename_map',
      access: 'member',
      // rename_map's input, its mapId taken from the path.
      body: actions.rename_map.input.omit({ mapId: true }),
      answers: [answer.json(200, 'The renamed map.', actions.rename_map.output)],
      errors: { 404: 'No such map.' },
    },
    async (req, { user, org, params }) => {
      const body = await bodyObject(req)
      const input = parseParams('rename map', actions.rename_map.input, {
        ...body,
        mapId: params.mapId,
      })
      return {
        status: 200,
        body: await run(app.deps, {
          action: 'rename_map',
          input,
          caller: app.caller({ user, org }),
        }),
      }
    },
  )

  /** Deletes a map and everything on it, permanently (delete_map). */
  app.org(
    'DELETE',
    '/maps/:mapId',
    {
      summary: 'Delete a map and everything on it, permanently, as delete_map',
      access: 'member',
      answers: [answer.noContent('The map is gone; open copies close.')],
      errors: { 400: 'mapId is not a UUID.', 404: 'No such map.' },
    },
    async (_req, { user, org, params }) => {
      const input = parseParams('delete map', actions.delete_map.input, { mapId: params.mapId })
      await run(app.deps, { action: 'delete_map', input, caller: app.caller({ user, org }) })
      return { status: 204 }
    },
  )

  /**
   * A node exists for the image actions once it is indexed; a node a person drew reaches
   * the document without an action, so it is indexed here, after checking it is on the map.
   */
  const nodeOnMap = async (orgId: string, mapId: string, nodeId: string) => {
    if (!(await mapIsLive(db, orgId, mapId))) {
      throw notFound(`No map with mapId ${mapId} in this organisation`)
    }
    const present = await live.read(mapDocName(orgId, mapId), (doc) =>
      mapDocMaps(doc).nodes.has(nodeId),
    )
    if (!present) throw notFound(`No node with nodeId ${nodeId} on map ${mapId}`)
    await db.transaction((tx) => indexItems(tx, orgId, mapId, 'node', [nodeId]))
  }

  /** Gives a node an image (set_node_image): proved from its bytes, published permanently. */
  app.org(
    'POST',
    '/maps/:mapId/nodes/:nodeId/image',
    {
      summary: 'Give a node an image, as set_node_image',
      description:
        "The bytes in imageBase64, never resized; the image gets a permanent public URL (imageUrl). Not counted against the agents' rate budgets.",
      access: 'member',
      // set_node_image's input, its nodeId taken from the path.
      body: actions.set_node_image.input.omit({ nodeId: true }),
      answers: [answer.json(200, 'The node with its imageUrl.', actions.set_node_image.output)],
      errors: { 404: 'No such map, or no such node on it.' },
    },
    async (req, { user, org, params }) => {
      const mapId = pathId(params, 'mapId')
      const nodeId = pathId(params, 'nodeId')
      const body = await bodyObject(req)
      const input = parseParams('set node image', actions.set_node_image.input, {
        ...body,
        nodeId,
      })
      await nodeOnMap(org.id, mapId, nodeId)
      return {
        status: 200,
        body: await run(app.deps, {
          action: 'set_node_image',
          input,
          caller: app.caller({ user, org }),
        }),
      }
    },
  )

  /** Takes a node's image off (clear_node_image); the published file stays. */
  app.org(
    'DELETE',
    '/maps/:mapId/nodes/:nodeId/image',
    {
      summary: "Take a node's image off, as clear_node_image",
      description: actions.clear_node_image.description,
      access: 'member',
      answers: [answer.json(200, 'The node.', actions.clear_node_image.output)],
      errors: { 400: 'mapId or nodeId is not a UUID.', 404: 'No such map, or no such node on it.' },
    },
    async (_req, { user, org, params }) => {
      const mapId = pathId(params, 'mapId')
      const nodeId = pathId(params, 'nodeId')
      const input = parseParams('clear node image', actions.clear_node_image.input, { nodeId })
      await nodeOnMap(org.id, mapId, nodeId)
      return {
        status: 200,
        body: await run(app.deps, {
          action: 'clear_node_image',
          input,
          caller: app.caller({ user, org }),
        }),
      }
    },
  )

  /**
   * A map as a download (export_map): the bytes with their Content-Type, and a file name
   * from the map's title.
   */
  app.org(
    'GET',
    '/maps/:mapId/export',
    {
      summary: 'Download a map, as export_map',
      description:
        'Mermaid (.mmd), a Markdown outline (.md), SVG or PNG, as an attachment named after the map.',
      access: 'member',
      query: {
        format: {
          description: 'mermaid, markdown, svg or png.',
          schema: actions.export_map.input.shape.format,
          required: true,
        },
      },
      answers: [answer.file('The exported file, Content-Disposition: attachment.')],
      errors: { 400: 'format is missing or unknown.', 404: 'No such map.' },
    },
    async (req, { user, org, params }) => {
      const query = queryOf(req)
      const input = parseParams('export map', actions.export_map.input, {
        mapId: params.mapId,
        format: query.get('format') ?? undefined,
      })
      const map = await readMapContent(app.context({ user, org }), input.mapId)
      const type = EXPORT_TYPES[input.format]
      return {
        status: 200,
        file: {
          bytes: exportBytes(map, input.format),
          mimeType: type.mimeType,
          filename: mapFileName(map.title, type.extension),
        },
      }
    },
  )

  /** Tidies a map into a tree, live for everyone watching (layout_map). */
  app.org(
    'POST',
    '/maps/:mapId/layout',
    {
      summary: 'Tidy a map into a tree, as layout_map',
      description: actions.layout_map.description,
      access: 'member',
      // layout_map's input, its mapId taken from the path.
      body: actions.layout_map.input.omit({ mapId: true }),
      answers: [answer.json(200, 'Every node with its new x, y.', actions.layout_map.output)],
      errors: { 404: 'No such map, or rootNodeId is not on it.' },
    },
    async (req, { user, org, params }) => {
      const body = await bodyObject(req)
      const input = parseParams('layout map', actions.layout_map.input, {
        ...body,
        mapId: params.mapId,
      })
      return {
        status: 200,
        body: await run(app.deps, {
          action: 'layout_map',
          input,
          caller: app.caller({ user, org }),
        }),
      }
    },
  )
}
