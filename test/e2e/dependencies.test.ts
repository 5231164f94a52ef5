import type { BrowserContext, Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import type * as Y from 'yjs'
import { boardDocName } from '../../shared/board-doc.ts'
import { connectProvider, type LiveClient, type Person } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'
import {
  card,
  openBoard,
  serverAndBrowser,
  signedInContext,
  until,
  watchErrors,
} from './support.ts'

/**
 * Card dependencies in the app (issue 18): a card shows what it waits for and what waits
 * for it, a blocked card looks blocked on the board, and people change blockers in the
 * card panel under the rules set_task_dependencies keeps (no card waiting for itself, at
 * most 50, no cycle, nothing while someone else holds the claim). Blockers are put on
 * cards here the way a person's app does it (the whole `blockedBy` array set on the
 * card's map in the live board document, through a real provider) or by an agent's
 * set_task_dependencies.
 */
describe.each(STORAGES)('card dependencies in the app (%s)', (kind) => {
  const running = serverAndBrowser(kind)

  async function start(titles: string[]) {
    const session = await signedInContext(running.browser, running.server.url)
    const errors = watchErrors(session.page)
    const { columns } = await session.agent.ok('list_columns')
    const byTitle = (t: string): string => columns.find((c: { title: string }) => c.title === t).id
    const ids: Record<string, string> = {}
    for (const title of titles) {
      const { task } = await session.agent.ok('create_task', {
        columnId: byTitle('Backlog'),
        title,
      })
      ids[title] = task.id
    }
    await openBoard(session.page, session.orgId)
    for (const title of titles) await card(session.page, title).waitFor()
    return { ...session, errors, ids, column: byTitle }
  }

  /** The person's own board document over a second, real provider. */
  async function liveBoard(person: Person): Promise<LiveClient> {
    return connectProvider(running.server.url, boardDocName(person.orgId), await person.syncToken())
  }

  const blockersIn = (live: LiveClient, taskId: string): string[] | undefined => {
    const v = live.doc.getMap<Y.Map<unknown>>('tasks').get(taskId)?.get('blockedBy')
    return Array.isArray(v) ? v : undefined
  }

  /** A person's live edit: the whole list at once, as the app writes it. */
  async function setBlockers(live: LiveClient, taskId: string, blockedBy: string[]) {
    const m = live.doc.getMap<Y.Map<unknown>>('tasks').get(taskId)
    if (!m) throw new Error(`card ${taskId} is not on the board`)
    live.doc.transact(() => m.set('blockedBy', blockedBy))
    // Still there once the server has seen it: a revert would have put it back.
    await until(async () => (live.provider.unsyncedChanges === 0 ? true : undefined))
    expect(blockersIn(live, taskId)).toEqual(blockedBy)
  }

  const panel = (page: Page) => page.getByTestId('card-panel')
  const panelTitle = (page: Page) => panel(page).getByLabel('Title', { exact: true })

  async function openCard(page: Page, title: string) {
    await card(page, title).click()
    await expect.poll(() => panelTitle(page).inputValue()).toBe(title)
  }

  const blockedBy = (page: Page) => panel(page).getByTestId('blocked-by')
  const blocks = (page: Page) => panel(page).getByTestId('blocks')
  const rowTexts = (section: ReturnType<Page['locator']>) =>
    section.locator('.dep-row .dep-link').allTextContents()

  const choices = (page: Page) =>
    panel(page).getByRole('listbox', { name: 'Cards on the board' }).getByRole('option')

  async function pickBlocker(page: Page, query: string, title: string) {
    const input = panel(page).getByRole('combobox', { name: 'Add a blocker' })
    await input.fill(query)
    await choices(page).filter({ hasText: title }).first().click()
  }

  /** Polls the agent API gently: every call counts against the key's rate limit. */
  async function agentSees<T>(check: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + 10_000
    for (;;) {
      const v = await check()
      if (v !== undefined) return v
      if (Date.now() > deadline) throw new Error('the agent API never showed it')
      await new Promise((r) => setTimeout(r, 200))
    }
  }

  test('a card shows its blockers and the cards it blocks, with links that open them', async () => {
    const { context, page, person, ids, errors } = await start([
      'Ship the release',
      'Write the changelog',
      'Fix the flaky test',
      'Announce it',
    ])
    const live = await liveBoard(person)
    await setBlockers(live, ids['Ship the release'] as string, [
      ids['Write the changelog'] as string,
      ids['Fix the flaky test'] as string,
    ])
    await setBlockers(live, ids['Announce it'] as string, [ids['Ship the release'] as string])

    await openCard(page, 'Ship the release')
    await expect
      .poll(() => rowTexts(blockedBy(page)))
      .toEqual(['Write the changelog', 'Fix the flaky test'])
    await expect.poll(() => rowTexts(blocks(page))).toEqual(['Announce it'])
    await expect(blockedBy(page).textContent()).resolves.toContain('Waiting for 2 of 2')

    // A blocker's link opens that card, whose "Blocks" lists the first one.
    await blockedBy(page).getByRole('link', { name: 'Write the changelog' }).click()
    await expect.poll(() => panelTitle(page).inputValue()).toBe('Write the changelog')
    expect(page.url()).toContain(`card=${ids['Write the changelog']}`)
    await expect.poll(() => rowTexts(blocks(page))).toEqual(['Ship the release'])
    await expect(blockedBy(page).textContent()).resolves.toContain('waits for no other card')

    // And back through "Blocks", then on to what the first card blocks.
    await blocks(page).getByRole('link', { name: 'Ship the release' }).click()
    await expect.poll(() => panelTitle(page).inputValue()).toBe('Ship the release')
    await blocks(page).getByRole('link', { name: 'Announce it' }).click()
    await expect.poll(() => panelTitle(page).inputValue()).toBe('Announce it')
    await expect.poll(() => rowTexts(blockedBy(page))).toEqual(['Ship the release'])
    // The browser's Back goes to the card before, as links do.
    await page.goBack()
    await expect.poll(() => panelTitle(page).inputValue()).toBe('Ship the release')

    // A retitled blocker reads its new title at once.
    live.doc.transact(() =>
      live.doc
        .getMap<Y.Map<unknown>>('tasks')
        .get(ids['Fix the flaky test'] as string)
        ?.set('title', 'Fix the flaky login test'),
    )
    await expect
      .poll(() => rowTexts(blockedBy(page)))
      .toEqual(['Write the changelog', 'Fix the flaky login test'])
    live.destroy()
    expect(errors).toEqual([])
    await context.close()
  })

  test('a card whose blocker is open looks blocked and stops when the blocker moves to done', async () => {
    const { context, page, agent, ids, column, errors } = await start([
      'Deploy to production',
      'Pass the security review',
    ])
    const waiting = card(page, 'Deploy to production')
    await expect(waiting.getAttribute('data-blocked')).resolves.toBeNull()
    // An agent's set_task_dependencies reaches the open board live.
    await agent.ok('set_task_dependencies', {
      taskId: ids['Deploy to production'],
      blockedBy: [ids['Pass the security review']],
    })

    await expect.poll(() => waiting.getAttribute('data-blocked')).toBe('true')
    await expect(waiting.locator('.badge-blocked').textContent()).resolves.toBe('Blocked')
    await expect(waiting.getAttribute('aria-label')).resolves.toMatch(/blocked/i)
    // The blocker itself is not blocked.
    await expect(card(page, 'Pass the security review').getAttribute('data-blocked')).resolves.toBe(
      null,
    )

    // The board filters on it, as get_board's `blocked` does.
    const filter = page.getByLabel('Filter by blocked')
    await filter.selectOption('true')
    await card(page, 'Pass the security review').waitFor({ state: 'detached' })
    await expect(waiting.isVisible()).resolves.toBe(true)
    await filter.selectOption('false')
    await waiting.waitFor({ state: 'detached' })
    await expect(card(page, 'Pass the security review').isVisible()).resolves.toBe(true)
    await filter.selectOption('')
    await waiting.waitFor()

    // Done closes the blocker: the card is free.
    await agent.ok('move_task', {
      taskId: ids['Pass the security review'],
      columnId: column('Done'),
    })
    await expect.poll(() => waiting.getAttribute('data-blocked')).toBeNull()
    await expect(waiting.locator('.badge-blocked').count()).resolves.toBe(0)
    // The panel shows the closed blocker as done, struck through, and still listed.
    await openCard(page, 'Deploy to production')
    const row = blockedBy(page).locator('.dep-row', { hasText: 'Pass the security review' })
    await expect(row.getAttribute('class')).resolves.toContain('dep-closed')
    await expect(row.textContent()).resolves.toContain('Done')
    await expect(blockedBy(page).textContent()).resolves.toContain('All done')

    // Back out of Done reopens it; archiving it closes it for good.
    await agent.ok('move_task', {
      taskId: ids['Pass the security review'],
      columnId: column('In progress'),
    })
    await expect.poll(() => waiting.getAttribute('data-blocked')).toBe('true')
    await expect.poll(() => row.textContent()).toContain('In progress')
    await agent.ok('archive_task', { taskId: ids['Pass the security review'] })
    await expect.poll(() => waiting.getAttribute('data-blocked')).toBeNull()
    // Off the board, it keeps its name: the app asks the server for the archived card.
    await expect
      .poll(() => blockedBy(page).locator('.dep-row').textContent())
      .toMatch(/Pass the security review.*Archived/)
    expect(errors).toEqual([])
    await context.close()
  })

  test('a person adds and removes a blocker in the card panel and the agent API reads it', async () => {
    const { context, page, agent, ids, errors } = await start([
      'Migrate the database',
      'Back up the database',
      'Tell the on-call team',
    ])
    await openCard(page, 'Migrate the database')
    await pickBlocker(page, 'back', 'Back up the database')
    await expect.poll(() => rowTexts(blockedBy(page))).toEqual(['Back up the database'])
    // Keyboard: type, arrow to the match, Enter.
    const input = panel(page).getByRole('combobox', { name: 'Add a blocker' })
    await input.fill('on-call')
    await input.press('ArrowDown')
    await input.press('Enter')
    await expect
      .poll(() => rowTexts(blockedBy(page)))
      .toEqual(['Back up the database', 'Tell the on-call team'])
    await expect
      .poll(() => card(page, 'Migrate the database').getAttribute('data-blocked'))
      .toBe('true')

    const read = async () =>
      (await agent.ok('get_task', { taskId: ids['Migrate the database'] })).task
    const task = await agentSees(async () => {
      const t = await read()
      return t.blockedBy?.length === 2 ? t : undefined
    })
    expect(task.blockedBy).toEqual([ids['Back up the database'], ids['Tell the on-call team']])
    expect(task.blocked).toBe(true)

    await blockedBy(page)
      .getByRole('button', { name: 'Remove blocker Back up the database' })
      .click()
    await blockedBy(page)
      .getByRole('button', { name: 'Remove blocker Tell the on-call team' })
      .click()
    await expect.poll(() => rowTexts(blockedBy(page))).toEqual([])
    await expect
      .poll(() => card(page, 'Migrate the database').getAttribute('data-blocked'))
      .toBeNull()
    const after = await agentSees(async () => {
      const t = await read()
      return t.blockedBy?.length === 0 ? t : undefined
    })
    expect(after.blocked).toBe(false)
    // Nothing was put back by the server on the way.
    await expect(page.getByTestId('toast-revert').count()).resolves.toBe(0)
    expect(errors).toEqual([])
    await context.close()
  })

  test('a cycle is refused in the panel', async () => {
    const { context, page, person, ids, errors } = await start([
      'Design the API',
      'Build the API',
      'Document the API',
    ])
    const live = await liveBoard(person)
    // Document waits for Build, which waits for Design.
    await setBlockers(live, ids['Build the API'] as string, [ids['Design the API'] as string])
    await setBlockers(live, ids['Document the API'] as string, [ids['Build the API'] as string])

    await openCard(page, 'Design the API')
    const input = panel(page).getByRole('combobox', { name: 'Add a blocker' })
    await input.fill('API')
    // The card itself is never offered; a card that waits for this one is marked.
    await expect(choices(page).allTextContents()).resolves.toEqual([
      'Build the APIwaits for this card',
      'Document the APIwaits for this card',
    ])
    await choices(page).filter({ hasText: 'Document the API' }).click()
    const problem = panel(page).getByTestId('dependency-problem')
    await problem.waitFor()
    await expect(problem.textContent()).resolves.toBe(
      '“Document the API” cannot block “Design the API”: that would make a cycle (“Design the API” waits for “Document the API”, which waits for “Build the API”, which waits for “Design the API”), and no card on it could ever start.',
    )
    await expect(problem.getAttribute('role')).resolves.toBe('alert')
    // Nothing was written.
    await expect.poll(() => rowTexts(blockedBy(page))).toEqual([])
    expect(blockersIn(live, ids['Design the API'] as string)).toBeUndefined()

    // Typing again clears the message.
    await input.fill('Doc')
    await expect(problem.count()).resolves.toBe(0)
    live.destroy()
    expect(errors).toEqual([])
    await context.close()
  })

  test('a card another agent has claimed shows its blockers but offers no way to change them', async () => {
    const { context, page, person, agent, ids, errors } = await start(['Held card', 'Its blocker'])
    const live = await liveBoard(person)
    await setBlockers(live, ids['Held card'] as string, [ids['Its blocker'] as string])
    await agent.ok('claim_task', { taskId: ids['Held card'], agentName: 'Zed' })
    await openCard(page, 'Held card')
    await panel(page).getByTestId('claim-details').waitFor()
    await expect.poll(() => rowTexts(blockedBy(page))).toEqual(['Its blocker'])
    await expect(
      panel(page).getByRole('combobox', { name: 'Add a blocker' }).count(),
    ).resolves.toBe(0)
    await expect(blockedBy(page).getByRole('button').count()).resolves.toBe(0)
    // The link still works.
    await blockedBy(page).getByRole('link', { name: 'Its blocker' }).click()
    await expect.poll(() => panelTitle(page).inputValue()).toBe('Its blocker')
    await expect(
      panel(page).getByRole('combobox', { name: 'Add a blocker' }).count(),
    ).resolves.toBe(1)
    live.destroy()
    expect(errors).toEqual([])
    await context.close()
  })

  test('a card at 50 blockers offers no way to add another', async () => {
    const { context, page, person, agent, ids, column, errors } = await start(['Big launch'])
    const many: string[] = []
    for (let i = 1; i <= 51; i++) {
      const { task } = await agent.ok('create_task', {
        columnId: column('Ready'),
        title: `Step ${i}`,
      })
      many.push(task.id)
    }
    const live = await liveBoard(person)
    await setBlockers(live, ids['Big launch'] as string, many.slice(0, 49))
    await openCard(page, 'Big launch')
    await expect.poll(() => blockedBy(page).locator('.dep-row').count()).toBe(49)
    await pickBlocker(page, 'Step 50', 'Step 50')
    await expect.poll(() => blockedBy(page).locator('.dep-row').count()).toBe(50)
    await expect(
      panel(page).getByRole('combobox', { name: 'Add a blocker' }).count(),
    ).resolves.toBe(0)
    await expect(blockedBy(page).textContent()).resolves.toContain(
      'A card waits for at most 50 cards: remove one to add another.',
    )
    await until(async () =>
      blockersIn(live, ids['Big launch'] as string)?.length === 50 ? true : undefined,
    )
    live.destroy()
    expect(errors).toEqual([])
    await context.close()
  })

  test('a blocker added offline that closes a cycle meanwhile is put back by the server, and the app says why', async () => {
    const { context, page, person, ids } = await start(['Write the spec', 'Review the spec'])
    const live = await liveBoard(person)
    await openCard(page, 'Review the spec')
    await goOffline(page, context)
    // Meanwhile someone else makes the spec wait for its review…
    await setBlockers(live, ids['Write the spec'] as string, [ids['Review the spec'] as string])
    // …while this person, offline, makes the review wait for the spec: no cycle on this device.
    await pickBlocker(page, 'Write', 'Write the spec')
    await expect.poll(() => rowTexts(blockedBy(page))).toEqual(['Write the spec'])

    await context.setOffline(false)
    const notice = page.getByTestId('toast-revert')
    await notice.waitFor({ timeout: 20_000 })
    await expect(notice.textContent()).resolves.toMatch(/Review the spec.*cycle/i)
    await expect.poll(() => rowTexts(blockedBy(page))).toEqual([])
    await expect.poll(() => blockersIn(live, ids['Review the spec'] as string) ?? []).toEqual([])
    expect(blockersIn(live, ids['Write the spec'] as string)).toEqual([ids['Review the spec']])
    live.destroy()
    await context.close()
  })

  async function goOffline(page: Page, context: BrowserContext) {
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => true))
    await context.setOffline(true)
    await page.locator('[data-sync-state="offline"]').waitFor()
  }
})
