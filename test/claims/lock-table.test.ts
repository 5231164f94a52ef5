import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type ActionName, actionNames, actions } from '../../shared/actions.ts'
import { png } from '../images/fixtures.ts'
import type { Agent } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'
import { boardWithAgents, type ClockServer, startClockServer } from './harness.ts'

/**
 * The action table's `claimLocked` flag is the contract agents read (the MCP descriptions
 * say which tools answer 409 while someone else holds the card): every action that can
 * touch a card is called here on a card another agent holds, and exactly the flagged ones
 * must refuse with 409 naming the holder. An action that takes no card must not be flagged.
 */

/** Fresh params for each action that touches a card: the held card, its column, one of its comments. */
type Target = { taskId: string; columnId: string; otherColumnId: string; commentId: string }
const ON_A_CARD: Partial<Record<ActionName, (t: Target) => Record<string, unknown>>> = {
  get_task: (t) => ({ taskId: t.taskId }),
  update_task: (t) => ({ taskId: t.taskId, title: 'changed by another agent' }),
  set_task_tags: (t) => ({ taskId: t.taskId, tags: ['theirs'] }),
  set_task_dependencies: (t) => ({ taskId: t.taskId, blockedBy: [] }),
  move_task: (t) => ({ taskId: t.taskId, columnId: t.otherColumnId }),
  add_comment: (t) => ({ taskId: t.taskId, body: 'a note from another agent' }),
  update_comment: (t) => ({ commentId: t.commentId, body: 'edited by its author' }),
  delete_comment: (t) => ({ commentId: t.commentId }),
  archive_task: (t) => ({ taskId: t.taskId }),
  delete_column: (t) => ({ columnId: t.columnId }),
  claim_task: (t) => ({ taskId: t.taskId }),
  heartbeat_task: (t) => ({ taskId: t.taskId }),
  release_task: (t) => ({ taskId: t.taskId }),
  attach_screenshot: (t) => ({
    taskId: t.taskId,
    imageBase64: Buffer.from(png({ width: 2, height: 2 })).toString('base64'),
  }),
}

describe.each(STORAGES)('claim locks follow the action table (%s)', (kind) => {
  let server: ClockServer
  let holder: Agent
  let other: Agent

  beforeAll(async () => {
    server = await startClockServer(kind)
    const board = await boardWithAgents(server.url, 2)
    ;[holder, other] = board.agents as [Agent, Agent]
  })
  afterAll(() => server.close())

  /** A card in a column of its own, held by `holder`, with a comment `other` wrote. */
  async function heldCard(): Promise<Target> {
    const { column } = await other.ok('create_column', { title: `Held ${crypto.randomUUID()}` })
    const { columns } = await other.ok('list_columns')
    const otherColumnId = columns.find((c: { id: string }) => c.id !== column.id).id
    const { task } = await other.ok('create_task', { columnId: column.id, title: 'Held' })
    const { comment } = await other.ok('add_comment', { taskId: task.id, body: 'before the claim' })
    await holder.ok('claim_task', { taskId: task.id, agentName: 'Holder' })
    return { taskId: task.id, columnId: column.id, otherColumnId, commentId: comment.id }
  }

  test('exactly the claim-locked actions refuse another holder’s card, with 409 and the holder', async () => {
    const refused: string[] = []
    for (const [name, params] of Object.entries(ON_A_CARD)) {
      const res = await other.call(name, params(await heldCard()))
      if (res.status === 409) {
        // A card's lock names its holder; a column's names the cards being worked on.
        if (name === 'delete_column') expect(res.body.error).toMatch(/actively worked/)
        else expect(res.body.holder, name).toMatchObject({ agentName: 'Holder' })
        refused.push(name)
      } else {
        expect([name, res.status, res.body]).toEqual([name, 200, expect.anything()])
      }
    }
    const locked = actionNames.filter((n) => actions[n].claimLocked)
    expect(refused.sort()).toEqual(locked.sort())
  })

  test('no action that takes no card is flagged claim locked', () => {
    const touching = new Set(Object.keys(ON_A_CARD))
    const flaggedElsewhere = actionNames.filter((n) => actions[n].claimLocked && !touching.has(n))
    expect(flaggedElsewhere).toEqual([])
  })
})
