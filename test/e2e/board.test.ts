import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Agent } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import {
  card,
  centerOf,
  column,
  dragTo,
  launchBrowser,
  newContext,
  openBoard,
  pngBase64,
  screenshot,
  signedInContext,
  watchErrors,
} from './support.ts'

describe('the web app: board, card and API keys in real Chromium', () => {
  let server: TestServer
  let browser: Browser

  beforeAll(async () => {
    ;[server, browser] = await Promise.all([startServer('pglite'), launchBrowser()])
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  test('sign up, create a key shown once with a copy button, and an agent’s create_task appears on the open board without a reload', async () => {
    const context = await newContext(browser, server.url)
    const page = await context.newPage()
    const errors = watchErrors(page)
    await page.goto('/')
    await page.getByRole('link', { name: 'Create an account' }).click()
    await page.getByLabel('Your name').fill('Grace Hopper')
    await page.getByLabel('Email').fill('grace@example.test')
    await page.getByLabel('Password').fill('correct horse battery')
    await page.getByLabel('Organisation name').fill('Compilers Inc')
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.locator('[data-sync-state="synced"]').waitFor()
    await expect(page.locator('.column-title').allTextContents()).resolves.toEqual([
      'Backlog',
      'Ready',
      'In progress',
      'Done',
    ])

    await page.getByRole('link', { name: 'Settings' }).click()
    await page.getByRole('link', { name: 'API keys' }).click()
    await page.getByLabel('Key name').fill('Triage agent')
    await page.getByRole('button', { name: 'Create key' }).click()
    const key = (await page.getByTestId('api-key-value').textContent()) ?? ''
    expect(key).toMatch(/^cb_/)
    await expect(page.getByRole('button', { name: 'Copy key' }).isVisible()).resolves.toBe(true)
    await expect(page.getByTestId('api-keys-table').textContent()).resolves.toContain(
      'Triage agent',
    )
    await screenshot(page, 'api-keys.png')

    // Shown once: after a reload the key is listed by name and prefix, never in full.
    await page.reload()
    await page.getByTestId('api-keys-table').waitFor()
    expect(await page.content()).not.toContain(key)

    await page.getByRole('link', { name: 'Board' }).click()
    await page.locator('[data-sync-state="synced"]').waitFor()
    const agent = new Agent(server.url, key)
    const board = await agent.ok('get_board')
    const ready = board.columns.find((c: { title: string }) => c.title === 'Ready')
    await agent.ok('create_task', { columnId: ready.id, title: 'Written by an agent', type: 'bug' })
    await card(page, 'Written by an agent').waitFor()
    await expect(column(page, 'Ready').textContent()).resolves.toContain('Written by an agent')
    expect(errors).toEqual([])
    await context.close()
  })

  describe('a board worked on by people and agents', () => {
    let page: Page
    let agent: Agent
    let orgId: string
    let owner: Awaited<ReturnType<typeof signedInContext>>['person']
    let closeContext: () => Promise<void>
    const ids: Record<string, string> = {}
    const columns: Record<string, string> = {}

    beforeAll(async () => {
      const s = await signedInContext(browser, server.url, {
        name: 'Ada Lovelace',
        email: 'ada@example.test',
        organizationName: 'Analytical Engines',
      })
      ;({ page, agent, orgId, person: owner } = s)
      closeContext = () => s.context.close()
      const board = await agent.ok('get_board')
      for (const c of board.columns) columns[c.title] = c.id
      const { body } = await owner.request('POST', `/api/app/orgs/${orgId}/projects`, {
        name: 'Checkout',
        color: '#10b981',
      })
      const checkout = body.project.id
      await owner.request('PATCH', `/api/app/orgs/${orgId}/columns/${columns['In progress']}`, {
        onFire: true,
      })
      const make = async (name: string, params: Record<string, unknown>) => {
        ids[name] = (await agent.ok('create_task', { title: name, ...params })).task.id
      }
      await make('Card payment fails on retry', {
        columnId: columns.Backlog,
        type: 'bug',
        priority: 'urgent',
        projectId: checkout,
      })
      await make('Add Apple Pay', {
        columnId: columns.Backlog,
        type: 'feature',
        priority: 'normal',
      })
      await make('Untriaged question', { columnId: columns.Backlog, type: 'question' })
      await make('Speed up the cart', {
        columnId: columns.Ready,
        type: 'improvement',
        priority: 'high',
        projectId: checkout,
      })
      await make('Rewrite tax rules', {
        columnId: columns['In progress'],
        type: 'chore',
        priority: 'low',
      })
      await make('Research fraud signals', { columnId: columns['In progress'], type: 'research' })
      await make('Ship receipts', { columnId: columns.Done, type: 'feature', priority: 'normal' })
      await agent.ok('set_task_tags', {
        taskId: ids['Card payment fails on retry'],
        tags: ['payments', 'p0'],
      })
      await agent.ok('set_task_tags', { taskId: ids['Add Apple Pay'], tags: ['payments'] })
      await agent.ok('claim_task', { taskId: ids['Speed up the cart'], agentName: 'Ada' })
      await agent.ok('claim_task', {
        taskId: ids['Rewrite tax rules'],
        agentName: 'Paul',
        house: 'Atreides',
        generation: 3,
        note: 'Porting the rules table',
      })
      await agent.ok('claim_task', {
        taskId: ids['Research fraud signals'],
        agentName: 'Leto',
        house: 'Atreides',
        isSubChild: true,
      })
      await agent.ok('add_comment', {
        taskId: ids['Card payment fails on retry'],
        body: 'Reproduced: the second charge is declined with a stale token.',
        agentName: 'Ada',
      })
      await agent.ok('add_comment', {
        taskId: ids['Card payment fails on retry'],
        body: 'Stack trace attached.',
        agentName: 'Ada',
      })
      await agent.ok('attach_screenshot', {
        taskId: ids['Card payment fails on retry'],
        imageBase64: pngBase64(64, 40, [220, 80, 60]),
        filename: 'declined.png',
      })
      await openBoard(page, orgId)
    })
    afterAll(() => closeContext())

    test('cards show type, effective priority (on fire counts as high), tags, project, counts and the claim label exactly as the specification spells it', async () => {
      const payment = card(page, 'Card payment fails on retry')
      await expect(payment.textContent()).resolves.toMatch(/Bug.*Urgent.*Checkout.*payments.*p0/)
      await expect(payment.locator('.count').allTextContents()).resolves.toEqual([
        '2 comments',
        '1 screenshots',
      ])
      await expect(
        card(page, 'Speed up the cart').locator('.claim-holder').textContent(),
      ).resolves.toBe('Ada')
      await expect(
        card(page, 'Rewrite tax rules').locator('.claim-holder').textContent(),
      ).resolves.toBe('Paul, 3rd of House Atreides')
      await expect(
        card(page, 'Research fraud signals').locator('.claim-holder').textContent(),
      ).resolves.toBe("Leto's underling (House Atreides)")
      // Low on its own, high while its column is on fire.
      await expect(
        card(page, 'Rewrite tax rules').locator('.priority').textContent(),
      ).resolves.toContain('High')
      await expect(column(page, 'In progress').locator('.fire-badge').count()).resolves.toBe(1)
      // Its role is the column's own name: no badge repeats it; the title says it.
      await expect(column(page, 'In progress').locator('.role').count()).resolves.toBe(0)
      await expect(
        column(page, 'In progress').locator('.column-title').getAttribute('title'),
      ).resolves.toBe('Role: In progress')
      await screenshot(page, 'board.png')
    })

    test('filters by priority (on-fire cards count as high), by tag and by project', async () => {
      await page.getByLabel('Filter by priority').selectOption('high')
      await expect(page.locator('[data-card-id] .card-title').allTextContents()).resolves.toEqual(
        expect.arrayContaining([
          'Speed up the cart',
          'Rewrite tax rules',
          'Research fraud signals',
        ]),
      )
      await expect(page.locator('[data-card-id]').count()).resolves.toBe(3)
      await page.getByLabel('Filter by priority').selectOption('')
      await page.getByLabel('Filter by tag').selectOption('payments')
      await expect(page.locator('[data-card-id] .card-title').allTextContents()).resolves.toEqual([
        'Card payment fails on retry',
        'Add Apple Pay',
      ])
      await page.getByLabel('Filter by tag').selectOption('')
      await page.getByLabel('Filter by project').selectOption({ label: 'Checkout' })
      await expect(page.locator('[data-card-id] .card-title').allTextContents()).resolves.toEqual([
        'Card payment fails on retry',
        'Speed up the cart',
      ])
      await page.getByRole('button', { name: 'Clear filters' }).click()
      await expect(page.locator('[data-card-id]').count()).resolves.toBe(7)
    })

    test('the card: agents’ and people’s comments told apart, a comment edited, claim details, screenshots through short-lived links', async () => {
      await card(page, 'Card payment fails on retry').click()
      const panel = page.getByTestId('card-panel')
      await panel.waitFor()
      // The thread lives in the card's own document, which syncs once the panel opens.
      await panel.locator('.comment-agent').nth(1).waitFor()
      await expect(panel.locator('.comment-agent').count()).resolves.toBe(2)
      await panel.getByLabel('Write a comment').fill('Thanks, I will pair on it after lunch.')
      await panel.getByRole('button', { name: 'Comment', exact: true }).click()
      await panel.locator('.comment-person').waitFor()
      await expect(panel.locator('.comment-person .comment-author').textContent()).resolves.toBe(
        'Ada Lovelace',
      )
      const shot = panel.locator('.shot img')
      await shot.waitFor()
      expect(await shot.getAttribute('src')).toMatch(/^\/files\/private\/.+sig=/)
      await expect
        .poll(() => shot.evaluate((img: HTMLImageElement) => img.naturalWidth), { timeout: 10_000 })
        .toBe(64)
      // A teammate deletes the screenshot: gone from the card and from storage.
      await panel.getByRole('button', { name: 'Delete screenshot declined.png' }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click()
      await panel.locator('.shot').waitFor({ state: 'detached' })
      await expect
        .poll(async () => {
          const t = await agent.ok('get_task', { taskId: ids['Card payment fails on retry'] })
          return t.attachments.length
        })
        .toBe(0)
      await panel.locator('.comment-person').getByRole('button', { name: 'Edit' }).click()
      await panel.getByLabel('Edit your comment').fill('Thanks, pairing on it at 2pm.')
      await panel.getByRole('button', { name: 'Save' }).click()
      await expect
        .poll(async () => {
          const { comments } = await agent.ok('get_task', {
            taskId: ids['Card payment fails on retry'],
          })
          return comments.find((c: { body: string }) => c.body.startsWith('Thanks'))
        })
        .toMatchObject({ body: 'Thanks, pairing on it at 2pm.', editedAt: expect.any(String) })
      const { task } = await agent.ok('get_task', { taskId: ids['Card payment fails on retry'] })
      expect(task.lastCommentBy).toBe('human')
      await page.keyboard.press('Escape')

      await card(page, 'Rewrite tax rules').click()
      const claim = page.getByTestId('claim-details')
      await claim.waitFor()
      await expect(claim.textContent()).resolves.toMatch(
        /Paul, 3rd of House Atreides.*is working on this card.*Porting the rules table/,
      )
      await screenshot(page, 'card.png')
      // A claimed card cannot be edited by anyone else, people included.
      await expect(
        page.getByTestId('card-panel').getByLabel('Priority', { exact: true }).isDisabled(),
      ).resolves.toBe(true)
      await page.getByRole('button', { name: 'Force release' }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'Force release' }).click()
      await claim.waitFor({ state: 'detached' })
      const board = await agent.ok('get_board')
      expect(board.activity.map((c: { taskId: string }) => c.taskId)).not.toContain(
        ids['Rewrite tax rules'],
      )
      await page.keyboard.press('Escape')
    })

    test('editing a card in the panel: title, type, priority, tags and the collaborative description reach the server', async () => {
      await card(page, 'Add Apple Pay').click()
      const panel = page.getByTestId('card-panel')
      await panel.getByLabel('Title', { exact: true }).fill('Add Apple Pay and Google Pay')
      await panel.getByLabel('Title', { exact: true }).press('Enter')
      await panel.getByLabel('Priority', { exact: true }).selectOption('high')
      await panel.getByLabel('Add a tag').fill('wallets')
      await panel.getByLabel('Add a tag').press('Enter')
      await panel.getByLabel('Description').fill('Both wallets behind one button.')
      await expect
        .poll(async () => (await agent.ok('get_task', { taskId: ids['Add Apple Pay'] })).task, {
          timeout: 10_000,
        })
        .toMatchObject({
          title: 'Add Apple Pay and Google Pay',
          priority: 'high',
          tags: ['payments', 'wallets'],
          description: 'Both wallets behind one button.',
        })
      // An agent typing in the same description shows up in the open field.
      await agent.ok('update_task', {
        taskId: ids['Add Apple Pay'],
        description: 'Both wallets behind one button. Agent: Stripe supports both.',
      })
      await expect
        .poll(() => panel.getByLabel('Description').textContent())
        .toBe('Both wallets behind one button. Agent: Stripe supports both.')
      await page.keyboard.press('Escape')
    })

    test('drag and drop moves a card between columns and within one, and columns by their handle; the keyboard moves a card too', async () => {
      const from = await centerOf(card(page, 'Untriaged question'))
      const target = await centerOf(column(page, 'Done').locator('.card-list'))
      await dragTo(page, from, { x: target.x, y: target.y + 60 })
      await expect
        .poll(
          async () =>
            (await agent.ok('get_task', { taskId: ids['Untriaged question'] })).task.columnId,
        )
        .toBe(columns.Done)

      // Within a column: drop the first card below the second.
      const first = await centerOf(card(page, 'Card payment fails on retry'))
      const second = await card(page, 'Add Apple Pay').boundingBox()
      if (!second) throw new Error('card not visible')
      await dragTo(page, first, { x: first.x, y: second.y + second.height - 4 })
      await expect
        .poll(() => column(page, 'Backlog').locator('.card-title').allTextContents())
        .toEqual(['Add Apple Pay and Google Pay', 'Card payment fails on retry'])

      // Columns move by their drag handle.
      const titles = async () =>
        (await agent.ok('list_columns')).columns.map((c: { title: string }) => c.title)
      const handle = await centerOf(column(page, 'Done').locator('[data-column-handle]'))
      const backlogBox = await column(page, 'Backlog').boundingBox()
      if (!backlogBox) throw new Error('column not visible')
      await dragTo(page, handle, { x: backlogBox.x + 20, y: backlogBox.y + 20 })
      await expect.poll(titles).toEqual(['Done', 'Backlog', 'Ready', 'In progress'])
      const back = await centerOf(column(page, 'Done').locator('[data-column-handle]'))
      const lastBox = await column(page, 'In progress').boundingBox()
      if (!lastBox) throw new Error('column not visible')
      await dragTo(page, back, { x: lastBox.x + lastBox.width - 10, y: lastBox.y + 20 })
      await expect.poll(titles).toEqual(['Backlog', 'Ready', 'In progress', 'Done'])

      // Keyboard: Space picks up, arrow right moves a column over, Space drops.
      await card(page, 'Ship receipts').focus()
      await page.keyboard.press('Space')
      await page.keyboard.press('ArrowLeft')
      await page.keyboard.press('Space')
      await expect
        .poll(
          async () => (await agent.ok('get_task', { taskId: ids['Ship receipts'] })).task.columnId,
        )
        .toBe(columns['In progress'])
    })

    test('columns are created, renamed, reordered and deleted; a card is archived and deleted', async () => {
      await page.getByRole('button', { name: 'Column', exact: true }).click()
      await page.getByRole('dialog').getByLabel('Title', { exact: true }).fill('Review')
      await page.getByRole('dialog').getByRole('button', { name: 'Add column' }).click()
      await column(page, 'Review').waitFor()
      await column(page, 'Review')
        .getByRole('button', { name: 'Actions for column Review' })
        .click()
      await page.getByRole('menuitem', { name: 'Rename' }).click()
      await page.getByLabel('Column title').fill('Code review')
      await page.getByLabel('Column title').press('Enter')
      await column(page, 'Code review').waitFor()
      await column(page, 'Code review')
        .getByRole('button', { name: 'Actions for column Code review' })
        .click()
      await page.getByRole('menuitem', { name: 'Move left' }).click()
      await expect
        .poll(async () =>
          (await agent.ok('list_columns')).columns.map((c: { title: string }) => c.title),
        )
        .toEqual(['Backlog', 'Ready', 'In progress', 'Code review', 'Done'])

      // Add a card to it, then delete the column, moving the card to Done.
      await column(page, 'Code review').getByRole('button', { name: 'Add card' }).click()
      await page.getByLabel('Title of the new card in Code review').fill('Review the diff')
      await page.getByLabel('Title of the new card in Code review').press('Enter')
      await card(page, 'Review the diff').waitFor()
      await page.getByLabel('Title of the new card in Code review').press('Escape')
      await column(page, 'Code review')
        .getByRole('button', { name: 'Actions for column Code review' })
        .click()
      await page.getByRole('menuitem', { name: 'Delete column…' }).click()
      await page.getByRole('dialog').getByLabel('Move the cards to').selectOption({ label: 'Done' })
      await page.getByRole('dialog').getByRole('button', { name: 'Delete column' }).click()
      await column(page, 'Code review').waitFor({ state: 'detached' })
      await expect(column(page, 'Done').textContent()).resolves.toContain('Review the diff')

      // Archive from the panel: off the board, still readable by id.
      await card(page, 'Review the diff').click()
      await page.getByRole('button', { name: 'Card actions' }).click()
      await page.getByRole('menuitem', { name: 'Archive' }).click()
      await card(page, 'Review the diff').waitFor({ state: 'detached' })
      // The page's edit reaches the server a moment after the card leaves the page.
      await expect
        .poll(async () =>
          (await agent.ok('get_board')).tasks.some(
            (t: { title: string }) => t.title === 'Review the diff',
          ),
        )
        .toBe(false)
      await page.getByRole('button', { name: 'Archived' }).click()
      // The Archived view reads the server (archived cards are not in the board document).
      await page
        .getByRole('dialog')
        .getByTestId('archived-card')
        .filter({ hasText: 'Review the diff' })
        .waitFor()
      await page.keyboard.press('Escape')

      // Delete a card for good.
      await card(page, 'Ship receipts').click()
      await page.getByRole('button', { name: 'Card actions' }).click()
      await page.getByRole('menuitem', { name: 'Delete card…' }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'Delete card' }).click()
      await card(page, 'Ship receipts').waitFor({ state: 'detached' })
      const gone = await agent.call('get_task', { taskId: ids['Ship receipts'] })
      expect(gone.status).toBe(404)
    })
  })
})
