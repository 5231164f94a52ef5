import { AgentApiError, type AgentClient } from '../../shared/agent-client.ts'
import type { Person } from '../support/client.ts'
import { PNG_BASE64 } from './harness.ts'

/**
 * One parity case per action the specification lists: how to build the state the action
 * needs and which params to send. A write gets two twin states built the same way, one
 * for the endpoint call and one for the MCP call; a read (`shared`) runs both calls on one
 * unchanged state. The parity test compares the two results, normalised only for ids and
 * times (see `normalized`).
 */
export interface ParityCase {
  /** Both calls read the same state (only for actions that change nothing). */
  shared?: boolean
  setup(f: Fixtures): Promise<Record<string, unknown>>
  /**
   * For a write whose result names nothing (`{ ok: true }`), so equal results would prove
   * little: checks the call's effect, given the params it was sent.
   */
  effect?(f: Fixtures, params: Record<string, unknown>): Promise<void>
}

/** Resolves once the call fails with this status (the typed client's error). */
async function failsWith(status: number, call: Promise<unknown>): Promise<void> {
  const outcome = await call.then(
    () => 'succeeded',
    (error: unknown) => (error instanceof AgentApiError ? error.status : String(error)),
  )
  if (outcome !== status) throw new Error(`expected a ${status}, got ${outcome}`)
}

/** Builders of fresh state, through the typed endpoint client (and the app API for people). */
export class Fixtures {
  readonly api: AgentClient
  readonly owner: Person
  private n = 0

  constructor(api: AgentClient, owner: Person) {
    this.api = api
    this.owner = owner
  }

  /** A fresh organisation-level column, placed far out so appends elsewhere never move it. */
  async column(): Promise<string> {
    this.n += 1
    const { column } = await this.api.create_column({
      title: `Fixture column ${this.n}`,
      position: 1_000_000 + this.n,
    })
    return column.id
  }

  async task(columnId?: string): Promise<string> {
    const { task } = await this.api.create_task({
      columnId: columnId ?? (await this.column()),
      title: 'Fixture card',
      description: 'Built for a parity check',
      type: 'chore',
    })
    return task.id
  }

  async claimedTask(): Promise<string> {
    const taskId = await this.task()
    await this.api.claim_task({ taskId, agentName: 'Ada', house: 'Lovelace', generation: 2 })
    return taskId
  }

  async comment(): Promise<string> {
    const { comment } = await this.api.add_comment({
      taskId: await this.task(),
      body: 'Fixture comment',
      agentName: 'Ada',
    })
    return comment.id
  }

  async project(): Promise<string> {
    const res = await this.owner.request('POST', `/api/app/orgs/${this.owner.orgId}/projects`, {
      name: 'Fixture project',
      color: '#3b82f6',
    })
    if (res.status !== 201) throw new Error(`project: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body.project.id
  }

  async map(): Promise<string> {
    return (await this.api.create_map({ title: 'Fixture map' })).map.id
  }

  async nodes(count: number, mapId?: string): Promise<{ mapId: string; ids: string[] }> {
    const id = mapId ?? (await this.map())
    const { nodes } = await this.api.create_nodes({
      mapId: id,
      nodes: Array.from({ length: count }, (_, i) => ({ text: `Node ${i}`, x: i * 220, y: 0 })),
    })
    return { mapId: id, ids: nodes.map((n) => n.id) }
  }

  async node(): Promise<string> {
    const { ids } = await this.nodes(1)
    return ids[0] as string
  }
}

/** Keyed by action name: the 40 actions of the table (23 board, 17 map). */
export const parityCases: Record<string, ParityCase> = {
  whoami: { shared: true, setup: async () => ({}) },
  get_board: {
    shared: true,
    setup: async (f) => {
      const taskId = await f.claimedTask()
      await f.api.add_comment({ taskId, body: 'On the board', agentName: 'Ada' })
      return { include: ['comments', 'attachments'] }
    },
  },
  get_task: {
    shared: true,
    setup: async (f) => {
      const taskId = await f.claimedTask()
      await f.api.add_comment({ taskId, body: 'A comment to read back', agentName: 'Ada' })
      await f.api.attach_screenshot({ taskId, imageBase64: PNG_BASE64, filename: 'screen.png' })
      return { taskId }
    },
  },
  search_tasks: {
    shared: true,
    setup: async (f) => {
      const taskId = await f.claimedTask()
      await f.api.update_task({
        taskId,
        title: 'Parity search for the zeppelin',
        agentName: 'Ada',
        house: 'Lovelace',
        generation: 2,
      })
      await f.api.add_comment({ taskId, body: 'The zeppelin lands at noon', agentName: 'Ada' })
      return { query: 'zeppelin', includeArchived: true }
    },
  },
  get_changes: {
    shared: true,
    setup: async (f) => {
      const { cursor } = await f.api.get_changes()
      const taskId = await f.claimedTask()
      const { comment } = await f.api.add_comment({
        taskId,
        body: 'A change to follow',
        agentName: 'Ada',
      })
      // The feed shows a change once the cursor has passed it (about a second): wait for
      // the last write, so both calls read the same, settled page.
      const deadline = Date.now() + 10_000
      while (
        !(await f.api.get_changes({ since: cursor })).comments.some((c) => c.id === comment.id)
      ) {
        if (Date.now() > deadline) throw new Error('the change feed never showed the comment')
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      return { since: cursor, limit: 50 }
    },
  },
  list_columns: { shared: true, setup: async () => ({}) },
  list_projects: {
    shared: true,
    setup: async (f) => {
      await f.project()
      return {}
    },
  },
  create_task: {
    setup: async (f) => ({
      columnId: await f.column(),
      title: 'Parity card',
      description: 'Created for parity',
      type: 'bug',
      priority: 'high',
      agentName: 'Ada',
    }),
  },
  update_task: {
    setup: async (f) => ({ taskId: await f.task(), title: 'Renamed card', priority: 'low' }),
  },
  set_task_tags: {
    setup: async (f) => ({ taskId: await f.task(), tags: [' ui ', 'UI', 'backend'] }),
  },
  move_task: {
    setup: async (f) => ({ taskId: await f.task(), columnId: await f.column() }),
  },
  set_task_dependencies: {
    setup: async (f) => ({ taskId: await f.task(), blockedBy: [await f.task()] }),
  },
  add_comment: {
    setup: async (f) => ({ taskId: await f.task(), body: 'Done, see the diff', agentName: 'Ada' }),
  },
  update_comment: {
    setup: async (f) => ({ commentId: await f.comment(), body: 'Edited comment' }),
  },
  delete_comment: { setup: async (f) => ({ commentId: await f.comment() }) },
  archive_task: { setup: async (f) => ({ taskId: await f.task() }) },
  attach_screenshot: {
    setup: async (f) => ({ taskId: await f.task(), imageBase64: PNG_BASE64, filename: 'shot.png' }),
  },
  create_column: {
    // Both columns land at the same place only with an explicit position.
    setup: async () => ({ title: 'Parity column', position: 5_000_000.5 }),
  },
  rename_column: {
    setup: async (f) => ({ columnId: await f.column(), title: 'Renamed column' }),
  },
  delete_column: {
    setup: async (f) => {
      const columnId = await f.column()
      await f.task(columnId)
      await f.task(columnId)
      return { columnId, destinationColumnId: await f.column() }
    },
  },
  claim_task: {
    setup: async (f) => ({
      taskId: await f.task(),
      agentName: 'Ada',
      house: 'Lovelace',
      generation: 2,
      note: 'Taking this one',
    }),
  },
  claim_next: {
    // A column of its own per call: each takes the card of its own twin state.
    setup: async (f) => {
      const columnId = await f.column()
      await f.task(columnId)
      return { columnId, agentName: 'Ada', note: 'The next one' }
    },
  },
  heartbeat_task: {
    setup: async (f) => ({ taskId: await f.claimedTask(), note: 'Still on it' }),
  },
  release_task: { setup: async (f) => ({ taskId: await f.claimedTask() }) },
  list_maps: {
    shared: true,
    setup: async (f) => {
      await f.map()
      return {}
    },
  },
  create_map: { setup: async () => ({ title: 'Parity map' }) },
  rename_map: { setup: async (f) => ({ mapId: await f.map(), title: 'Renamed map' }) },
  get_map: {
    shared: true,
    setup: async (f) => {
      const { mapId, ids } = await f.nodes(3)
      await f.api.create_edges({
        mapId,
        edges: [
          { sourceId: ids[0] as string, targetId: ids[1] as string },
          { sourceId: ids[0] as string, targetId: ids[2] as string },
        ],
      })
      await f.api.set_node_image({ nodeId: ids[1] as string, imageBase64: PNG_BASE64 })
      return { mapId }
    },
  },
  delete_map: {
    setup: async (f) => ({ mapId: await f.map() }),
    effect: (f, { mapId }) => failsWith(404, f.api.get_map({ mapId: mapId as string })),
  },
  create_node: {
    setup: async (f) => ({ mapId: await f.map(), text: 'An idea', x: 220, y: 90, color: '#f80' }),
  },
  create_nodes: {
    setup: async (f) => ({
      mapId: await f.map(),
      nodes: [
        { text: 'Root', x: 0, y: 0 },
        { text: 'Child', x: 220, y: 90, color: '#3b82f6' },
      ],
    }),
  },
  update_node: {
    setup: async (f) => ({ nodeId: await f.node(), text: 'Sharper idea', y: 180 }),
  },
  set_node_image: { setup: async (f) => ({ nodeId: await f.node(), imageBase64: PNG_BASE64 }) },
  clear_node_image: {
    setup: async (f) => {
      const nodeId = await f.node()
      await f.api.set_node_image({ nodeId, imageBase64: PNG_BASE64 })
      return { nodeId }
    },
  },
  delete_node: {
    setup: async (f) => ({ nodeId: await f.node() }),
    effect: (f, { nodeId }) =>
      failsWith(404, f.api.update_node({ nodeId: nodeId as string, text: 'gone?' })),
  },
  create_edge: {
    setup: async (f) => {
      const { mapId, ids } = await f.nodes(2)
      return { mapId, sourceId: ids[0], targetId: ids[1] }
    },
  },
  create_edges: {
    setup: async (f) => {
      const { mapId, ids } = await f.nodes(3)
      return {
        mapId,
        edges: [
          { sourceId: ids[0], targetId: ids[1] },
          { sourceId: ids[1], targetId: ids[2] },
        ],
      }
    },
  },
  delete_edge: {
    setup: async (f) => {
      const { mapId, ids } = await f.nodes(2)
      const { edge } = await f.api.create_edge({
        mapId,
        sourceId: ids[0] as string,
        targetId: ids[1] as string,
      })
      return { edgeId: edge.id }
    },
    effect: (f, { edgeId }) => failsWith(404, f.api.delete_edge({ edgeId: edgeId as string })),
  },
  export_map: {
    shared: true,
    setup: async (f) => {
      const { mapId, ids } = await f.nodes(3)
      await f.api.create_edges({
        mapId,
        edges: [
          { sourceId: ids[0] as string, targetId: ids[1] as string },
          { sourceId: ids[1] as string, targetId: ids[2] as string },
        ],
      })
      return { mapId, format: 'markdown' }
    },
  },
  layout_map: {
    setup: async (f) => {
      const { mapId, ids } = await f.nodes(3)
      await f.api.create_edges({
        mapId,
        edges: [
          { sourceId: ids[0] as string, targetId: ids[1] as string },
          { sourceId: ids[0] as string, targetId: ids[2] as string },
        ],
      })
      return { mapId, direction: 'down' }
    },
  },
}
