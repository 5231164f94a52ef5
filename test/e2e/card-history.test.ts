import { describe, expect, test } from 'vitest'
import { STORAGES } from '../support/storage.ts'
import {
  card,
  openBoard,
  screenshot,
  serverAndBrowser,
  signedInContext,
  watchErrors,
} from './support.ts'

/** The card panel's timeline (issue 32): what happened to the card, who did it, newest first. */
describe.each(STORAGES)("a card's history in the card panel (%s)", (kind) => {
  const running = serverAndBrowser(kind)

  test('the timeline names the agent that created, moved and claimed the card and the person who moved it, and grows as things happen', async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
      { name: 'Grace Hopper' },
    )
    const errors = watchErrors(page)
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', {
      columnId: columns[0].id,
      title: 'Watched card',
      description: [
        '## Plan',
        '- [x] Reproduce the double refund',
        '- [ ] Make the retry idempotent',
        '',
        '```ts',
        "const key = request.headers['idempotency-key']",
        '```',
        '',
        '| Step | Owner |',
        '| --- | --- |',
        '| retry | agent |',
      ].join('\n'),
      agentName: 'Paul',
      house: 'Atreides',
      generation: 3,
    })
    await agent.ok('move_task', { taskId: task.id, columnId: columns[1].id, agentName: 'Paul' })
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Paul', note: 'on it' })
    await agent.ok('release_task', { taskId: task.id, agentName: 'Paul' })
    await openBoard(page, orgId)
    await card(page, 'Watched card').click()
    const timeline = page.getByTestId('card-history').locator('.history-event')
    await expect
      .poll(() => timeline.allTextContents(), { timeout: 10_000 })
      .toEqual([
        expect.stringMatching(/^Paul released it/),
        expect.stringMatching(/^Paul claimed it \(“on it”\)/),
        expect.stringMatching(
          new RegExp(`^Paul moved it from ${columns[0].title} → ${columns[1].title}`),
        ),
        expect.stringMatching(
          new RegExp(`^Paul, 3rd of House Atreides created the card in ${columns[0].title}`),
        ),
      ])

    // The person moves it in the panel: the timeline shows them by name.
    await page.getByTestId('card-panel').getByLabel('Column').selectOption(columns[2].id)
    await expect
      .poll(() => timeline.first().textContent(), { timeout: 10_000 })
      .toMatch(new RegExp(`^Grace Hopper moved it from ${columns[1].title} → ${columns[2].title}`))
    // An agent's comment arrives while the panel is open.
    await agent.ok('add_comment', { taskId: task.id, body: 'Done, see PR.', agentName: 'Paul' })
    await expect
      .poll(() => timeline.first().textContent(), { timeout: 10_000 })
      .toMatch(/^Paul commented: Done, see PR\./)
    await page.getByTestId('description-view').waitFor()
    await page.getByTestId('card-history').scrollIntoViewIfNeeded()
    await screenshot(page, 'card-history.png')
    expect(errors).toEqual([])
    await context.close()
  })
})
