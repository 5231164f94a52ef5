import type { mapActions } from '../../shared/actions/maps.ts'
import type { HandlerMap } from './context.ts'
import * as edges from './edges.ts'
import * as images from './images.ts'
import * as mapExport from './map-export.ts'
import * as mapLayout from './map-layout.ts'
import * as maps from './maps.ts'
import * as nodes from './nodes.ts'

export const mapHandlers: HandlerMap<keyof typeof mapActions> = {
  list_maps: maps.list_maps,
  create_map: maps.create_map,
  rename_map: maps.rename_map,
  get_map: maps.get_map,
  delete_map: maps.delete_map,
  create_node: nodes.create_node,
  create_nodes: nodes.create_nodes,
  update_node: nodes.update_node,
  set_node_image: nodes.set_node_image,
  clear_node_image: nodes.clear_node_image,
  delete_node: nodes.delete_node,
  create_edge: edges.create_edge,
  create_edges: edges.create_edges,
  delete_edge: edges.delete_edge,
  export_map: mapExport.export_map,
  layout_map: mapLayout.layout_map,
  attach_screenshot: images.attach_screenshot,
}
