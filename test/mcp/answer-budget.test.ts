import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { seedComments } from '../support/seed.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { callTool, TRANSPORTS, type World, world } from './harness.ts'

/**
 * No MCP answer exceeds MCP_ANSWER_TOKENS (default 20,000; a token counted as three
 * characters of the answer's text): get_board, get_task, get_changes, get_map and the
 * lists answer the first page that fits and say in one sentence how to page on or narrow;
 * structuredContent carries the same page. Through the SDK's real client, over both
 * transports (the stdio bridge asks the endpoint for the same budget).
 */

const BUDGET_CHARS = 20_000 * 3

/** The answer's text content, which the budget counts, and its structured content. */
async function answer(mcp: Client, name: string, args: Record<string, unknown>) {
  const result = await callTool(mcp, name, args)
  expect(result.isError, JSON.stringify(result.content).slice(0, 500)).toBeFalsy()
  const texts = result.content.filter((c) => c.type === 'text').map((c) => c.text)
  const text = texts.join('')
  expect(JSON.parse(texts[0] as string)).toEqual(result.structuredContent)
  return { text, body: result.structuredContent as any }
}

describe.each(TRANSPORTS.flatMap((t) => STORAGES.map((s) => [t, s] as const)))(
  'MCP answers fit MCP_ANSWER_TOKENS over %s (%s)',
  (transport, kind) => {
    let server: TestServer
    let w: World
    const cards: string[] = []

    beforeAll(async () => {
      server = await startServer(kind, { rateLimitPerKey: 100_000 })
      w = await world(transport, server.url)
      const { columns } = await w.api.list_columns()
      // 300 cards whose descriptions are ~600 characters (what agents write), 60 commented.
      // Made 20 at a time, as a few agents would (the client takes concurrent calls).
      for (let start = 0; start < 300; start += 20) {
        await Promise.all(
          Array.from({ length: 20 }, async (_, j) => {
            const i = start + j
            const { task } = await w.api.create_task({
              columnId: (columns[i % columns.length] as { id: string }).id,
              title: `Card ${i}: investigate the flaky login test`,
              description: `Plan for card ${i}. ${'Read the logs, find the cause, fix it, add a test. '.repeat(12)}`,
            })
            cards[i] = task.id
            if (i % 5 === 0) {
              await w.api.add_comment({ taskId: task.id, body: `Looked at card ${i}.` })
            }
          }),
        )
      }
    }, 240_000)
    afterAll(async () => {
      await w?.mcp.close()
      await server?.close()
    })

    test('get_board on a 300-card board answers the first page that fits, and the pages hold every card once', async () => {
      const seen: string[] = []
      let cursor: string | undefined
      let pages = 0
      do {
        const { text, body } = await answer(w.mcp, 'get_board', cursor ? { cursor } : {})
        pages += 1
        expect(text.length).toBeLessThanOrEqual(BUDGET_CHARS)
        if (pages === 1) {
          expect(body.activity).toBeDefined()
          expect(body.changesCursor).toBeDefined()
          expect(body.note).toMatch(
            /^Cards 1–\d+ of 300 fit the answer budget: call get_board with this nextCursor for the next page, or narrow with summary:true/,
          )
        }
        seen.push(...body.tasks.map((t: { id: string }) => t.id))
        cursor = body.nextCursor ?? undefined
      } while (cursor)
      expect(pages).toBeGreaterThan(2)
      expect(new Set(seen)).toEqual(new Set(cards))
      expect(seen).toHaveLength(300)
    })

    test('the summary of a 300-card board fits in one answer', async () => {
      const { text, body } = await answer(w.mcp, 'get_board', { summary: true })
      expect(text.length).toBeLessThanOrEqual(BUDGET_CHARS)
      expect(body.tasks.length + (body.nextCursor ? 1 : 0)).toBeGreaterThan(100)
    })

    test('get_changes with a large limit fits, and following its cursor reads every change', async () => {
      // The cursor trails the present by about a second: let it pass the last card made.
      await new Promise((r) => setTimeout(r, 1_200))
      const { text, body } = await answer(w.mcp, 'get_changes', {
        since: '2000-01-01T00:00:00Z',
        limit: 500,
      })
      expect(text.length).toBeLessThanOrEqual(BUDGET_CHARS)
      expect(body.truncated).toBe(true)
      expect(body.note).toMatch(/call get_changes again at once with this cursor/)
      const seen = new Set<string>(body.tasks.map((t: { id: string }) => t.id))
      let since = body.cursor
      for (let i = 0; i < 50; i++) {
        const next = await answer(w.mcp, 'get_changes', { since, limit: 500 })
        expect(next.text.length).toBeLessThanOrEqual(BUDGET_CHARS)
        for (const t of next.body.tasks) seen.add(t.id)
        if (!next.body.truncated) break
        since = next.body.cursor
      }
      for (const id of cards) expect(seen.has(id)).toBe(true)
    })

    test('get_task of a card with thousands of comments answers the newest that fit, with commentsBefore to page back', async () => {
      const taskId = cards[1] as string
      await seedComments(
        server.app.live,
        w.orgId,
        taskId,
        2_000,
        '2026-02-01T00:00:00.000Z',
        'A long review comment, written by a careful teammate who explains every step:',
      )
      const { text, body } = await answer(w.mcp, 'get_task', { taskId })
      expect(text.length).toBeLessThanOrEqual(BUDGET_CHARS)
      expect(body.commentsTruncated).toBe(true)
      expect(body.comments.at(-1).body).toMatch(/ 1999$/)
      const older = await answer(w.mcp, 'get_task', { taskId, commentsBefore: body.commentsBefore })
      expect(older.text.length).toBeLessThanOrEqual(BUDGET_CHARS)
      expect(older.body.comments.at(-1).createdAt < body.comments[0].createdAt).toBe(true)
    })

    test('search finds the card about the flaky login test among 300, within the budget', async () => {
      const { text, body } = await answer(w.mcp, 'search_tasks', { query: 'card 42 flaky login' })
      expect(text.length).toBeLessThanOrEqual(BUDGET_CHARS)
      expect(body.tasks[0].id).toBe(cards[42])
      expect(body.tasks[0].match.field).toBe('title')
    })

    test('get_map of a map of 2,000 thoughts answers in pages that fit', async () => {
      const { map } = await w.api.create_map({ title: 'Thoughts' })
      for (let batch = 0; batch < 20; batch++) {
        await w.api.create_nodes({
          mapId: map.id,
          nodes: Array.from({ length: 100 }, (_, i) => ({
            text: `Thought ${batch * 100 + i}: ${'an idea worth writing down. '.repeat(3)}`,
          })),
        })
      }
      const seen = new Set<string>()
      let cursor: string | undefined
      do {
        const { text, body } = await answer(w.mcp, 'get_map', {
          mapId: map.id,
          ...(cursor ? { cursor } : {}),
        })
        expect(text.length).toBeLessThanOrEqual(BUDGET_CHARS)
        for (const n of body.nodes) seen.add(n.id)
        cursor = body.nextCursor ?? undefined
      } while (cursor)
      expect(seen.size).toBe(2_000)
    })
  },
)

describe.each(STORAGES)('MCP_ANSWER_TOKENS sets the budget (%s)', (kind) => {
  let server: TestServer
  let w: World

  beforeAll(async () => {
    server = await startServer(kind, { rateLimitPerKey: 100_000, mcpAnswerTokens: 1_000 })
    w = await world('http', server.url)
    const { columns } = await w.api.list_columns()
    for (let i = 0; i < 40; i++) {
      await w.api.create_task({
        columnId: (columns[0] as { id: string }).id,
        title: `Card ${i}`,
        description: 'words '.repeat(50),
      })
    }
  })
  afterAll(async () => {
    await w?.mcp.close()
    await server?.close()
  })

  test('a service started with MCP_ANSWER_TOKENS=1000 answers at most 3,000 characters', async () => {
    const { text, body } = await answer(w.mcp, 'get_board', {})
    expect(text.length).toBeLessThanOrEqual(3_000)
    expect(body.nextCursor).toBeTruthy()
    // The endpoint without a budget is unchanged: the whole board, as the specification says.
    const whole = await w.api.get_board()
    expect(whole.tasks).toHaveLength(40)
  })
})
