import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type ActionName, actionNames, isActionName } from '../../shared/actions.ts'
import type { AgentClient } from '../../shared/agent-client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { callTool, normalized, TRANSPORTS, type World, world } from './harness.ts'
import { Fixtures, parityCases } from './parity-cases.ts'

/**
 * "Each action maps one-to-one onto a tool in the Model Context Protocol": every action of
 * the table is called through MCP and through POST /api/agent and must give the same
 * result. The tests are generated from the table, so an action without a parity case is a
 * failing test, not a gap.
 */

const callEndpoint = (api: AgentClient, name: ActionName, params: Record<string, unknown>) =>
  (api.call as (a: ActionName, p: unknown) => Promise<unknown>)(name, params)

/** A result without image bytes, as the text content shows it. */
function withoutImageBytes(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || !('images' in value)) return value
  const { images, ...rest } = value as { images: unknown }
  if (!Array.isArray(images)) return value
  return { ...rest, images: images.map(({ dataBase64: _, ...image }) => image) }
}

async function viaMcp(mcp: Client, name: ActionName, params: Record<string, unknown>) {
  const result = await callTool(mcp, name, params)
  if (result.isError)
    throw new Error(`${name} through MCP failed: ${JSON.stringify(result.content)}`)
  const [text] = result.content
  if (text?.type !== 'text') throw new Error(`${name}: the first content is not text`)
  // The text is the same result as JSON, with image bytes only in the image content.
  expect(withoutImageBytes(JSON.parse(text.text))).toEqual(
    withoutImageBytes(result.structuredContent),
  )
  return result.structuredContent
}

const transportsOverStorages = TRANSPORTS.flatMap((t) => STORAGES.map((s) => [t, s] as const))

describe.each(transportsOverStorages)(
  'every action through MCP over %s (%s)',
  (transport, kind) => {
    let server: TestServer
    let w: World
    let fixtures: Fixtures

    beforeAll(async () => {
      // Generous budgets: the parity cases build their state with many calls of one key.
      server = await startServer(kind, { rateLimitPerKey: 100_000, rateLimitImagesPerOrg: 1_000 })
      w = await world(transport, server.url)
      fixtures = new Fixtures(w.api, w.owner)
    })
    afterAll(async () => {
      await w?.mcp.close()
      await server?.close()
    })

    test('every action of the table has a parity case', () => {
      expect(actionNames.filter((name) => !Object.hasOwn(parityCases, name))).toEqual([])
    })

    test.each(actionNames)(
      '%s gives the same result through MCP as through the endpoint',
      async (name) => {
        const parity = parityCases[name]
        if (!parity)
          throw new Error(`no parity case for ${name}: add one to test/mcp/parity-cases.ts`)
        let endpointParams: Record<string, unknown>
        let mcpParams: Record<string, unknown>
        if (parity.shared) {
          endpointParams = await parity.setup(fixtures)
          mcpParams = endpointParams
        } else {
          endpointParams = await parity.setup(fixtures)
          mcpParams = await parity.setup(fixtures)
        }
        const fromEndpoint = await callEndpoint(w.budgeted, name, endpointParams)
        const fromMcp = await viaMcp(w.mcp, name, mcpParams)
        expect(normalized(fromMcp)).toEqual(normalized(fromEndpoint))
        if (parity.effect) {
          await parity.effect(fixtures, endpointParams)
          await parity.effect(fixtures, mcpParams)
        } else if (!parity.shared) {
          // Twin states must not make the comparison trivially true: the two calls acted on
          // different records.
          expect(JSON.stringify(fromMcp)).not.toBe(JSON.stringify(fromEndpoint))
        }
      },
    )

    // A case written ahead of its action is skipped, with the reason, until the action lands.
    for (const name of Object.keys(parityCases).filter((n) => !isActionName(n))) {
      test.skip(`${name}: not in the action table yet, so its parity case waits`, () => {})
    }
  },
)
