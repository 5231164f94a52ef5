import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type ActionName, actionNames, actions } from '../../shared/actions.ts'
import { png } from '../images/fixtures.ts'
import { Agent, Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/**
 * Every action's real answer, through the endpoint, against the output schema the action
 * table declares for it (the table's `output`, shared/schemas/outputs.ts): strict objects, so a field added to an
 * answer without its schema, or a value of the wrong shape, fails here. Each action runs in
 * the forms that change its answer's shape (get_board full, summary and with include; a
 * card with a project, a claim, comments and a screenshot).
 */
describe.each(STORAGES)('every action answers as its output schema says (%s)', (kind) => {
  let server: TestServer
  let agent: Agent
  let owner: Person
  /** The same key asking for answers within a small budget (Answer-Tokens). */
  let budgeted: Agent
  const seen = new Set<ActionName>()

  beforeAll(async () => {
    server = await startServer(kind)
    owner = new Person(server.url)
    await owner.signUp()
    agent = new Agent(server.url, await owner.createKey('outputs'))
    budgeted = new Agent(server.url, agent.key, { 'answer-tokens': '1000' })
  })
  afterAll(() => server?.close())

  async function run(
    name: ActionName,
    params: Record<string, unknown> = {},
    via: Agent = agent,
  ): Promise<any> {
    const body = await via.ok(name, params)
    const checked = actions[name].output.safeParse(body)
    expect(
      { name, params, issues: checked.success ? [] : checked.error.issues },
      JSON.stringify(body).slice(0, 2_000),
    ).toEqual({ name, params, issues: [] })
    seen.add(name)
    return body
  }

  test('the board and card actions', async () => {
    const projectId = await owner.createProject('Payments')
    const start = await run('get_changes')
    await run('whoami')
    const { columns } = await run('list_columns')
    await run('list_projects')
    const [first, second] = columns as { id: string }[]
    const { task } = await run('create_task', {
      columnId: first?.id,
      title: 'Checked',
      projectId,
      type: 'bug',
      priority: 'high',
    })
    await run('update_task', { taskId: task.id, description: 'All of it' })
    await run('set_task_tags', { taskId: task.id, tags: ['schema', 'output'] })
    await run('move_task', { taskId: task.id, columnId: second?.id })
    const { task: blocker } = await run('create_task', { columnId: first?.id, title: 'Blocker' })
    await run('set_task_dependencies', { taskId: task.id, blockedBy: [blocker.id] })
    await run('claim_next', { agentName: 'Picker', note: 'the next card' })
    expect(await run('claim_next', { agentName: 'Picker' })).toEqual({ task: null, claim: null })
    const { comment } = await run('add_comment', { taskId: task.id, body: 'A note' })
    await run('update_comment', { commentId: comment.id, body: 'A better note' })
    const image = Buffer.from(png({ width: 4, height: 3 })).toString('base64')
    await run('attach_screenshot', { taskId: task.id, imageBase64: image, filename: 'shot' })
    await run('claim_task', { taskId: task.id, agentName: 'Checker', note: 'checking' })
    await run('heartbeat_task', { taskId: task.id, agentName: 'Checker' })
    const full = await run('get_task', { taskId: task.id })
    expect(full.images).toHaveLength(1)
    expect(full.attachments[0].url).toBeTruthy()
    await run('get_board')
    await run('get_board', { summary: true })
    const included = await run('get_board', { include: ['comments', 'attachments'] })
    expect(included.comments.length).toBeGreaterThan(0)
    const page = await run('get_board', { limit: 1, include: ['comments'] })
    expect(page.nextCursor).toBeTruthy()
    await run('get_board', {
      limit: 1,
      cursor: page.nextCursor,
      summary: undefined,
      include: ['comments'],
    })
    await run('get_board', {}, budgeted)
    await run('get_board', { include: ['comments', 'attachments'] }, budgeted)
    await run('get_changes', { since: start.cursor, limit: 500 }, budgeted)
    const hits = await run('search_tasks', { query: 'checked' })
    expect(hits.tasks).toHaveLength(1)
    await run('get_task', {
      taskId: task.id,
      commentsBefore:
        (await run('get_task', { taskId: task.id }, budgeted)).commentsBefore ?? undefined,
    })
    await run('list_columns', {
      cursor: (await run('list_columns', {}, budgeted)).nextCursor ?? undefined,
    })
    await run('release_task', { taskId: task.id, agentName: 'Checker' })
    // The cursor stays a second behind now (docs/design.md), so what was just written is
    // in the next page once that second has passed.
    await new Promise((r) => setTimeout(r, 1_500))
    const changes = await run('get_changes', { since: start.cursor })
    expect(changes.tasks.length).toBeGreaterThan(0)
    const { column } = await run('create_column', { title: 'Later' })
    await run('rename_column', { columnId: column.id, title: 'Much later' })
    await run('delete_comment', { commentId: comment.id })
    await run('archive_task', { taskId: task.id })
    await run('get_task', { taskId: task.id })
    await run('search_tasks', { query: 'check', includeArchived: true })
    await run('delete_column', { columnId: second?.id, destinationColumnId: column.id })
  })

  test('the map actions', async () => {
    const { map } = await run('create_map', { title: 'Checked map' })
    await run('rename_map', { mapId: map.id, title: 'Checked map, renamed' })
    const { node } = await run('create_node', { mapId: map.id, text: 'Root', x: 0, y: 0 })
    const { nodes } = await run('create_nodes', {
      mapId: map.id,
      nodes: [{ text: 'A' }, { text: 'B', color: '#10b981' }],
    })
    await run('update_node', { nodeId: node.id, text: 'The root' })
    const image = Buffer.from(png({ width: 5, height: 5 })).toString('base64')
    const withImage = await run('set_node_image', { nodeId: node.id, imageBase64: image })
    expect(withImage.node.imageUrl).toBeTruthy()
    const { edge } = await run('create_edge', {
      mapId: map.id,
      sourceId: node.id,
      targetId: nodes[0].id,
    })
    await run('create_edges', {
      mapId: map.id,
      edges: [{ sourceId: node.id, targetId: nodes[1].id }],
    })
    await run('get_map', { mapId: map.id })
    await run('get_map', { mapId: map.id, limit: 2 })
    await run('get_map', { mapId: map.id }, budgeted)
    await run('export_map', { mapId: map.id, format: 'markdown', offset: 3 }, budgeted)
    await run('list_maps', {}, budgeted)
    await run('list_projects', {}, budgeted)
    for (const format of ['mermaid', 'markdown', 'svg', 'png']) {
      await run('export_map', { mapId: map.id, format })
    }
    await run('layout_map', { mapId: map.id, rootNodeId: node.id, direction: 'down' })
    await run('clear_node_image', { nodeId: node.id })
    await run('delete_edge', { edgeId: edge.id })
    await run('delete_node', { nodeId: nodes[1].id })
    await run('list_maps')
    await run('delete_map', { mapId: map.id })
  })

  test('every action of the table was checked', () => {
    expect(actionNames.filter((n) => !seen.has(n))).toEqual([])
  })
})
