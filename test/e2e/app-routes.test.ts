import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { boardDocName, mapDocName } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { cardDocName } from '../../shared/doc-names.ts'
import { mapDocMaps } from '../../shared/map-doc.ts'
import {
  type Agent,
  connectProvider,
  eventually,
  ownerWithAgent,
  Person,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { joinedMember, pngBase64, until } from './support.ts'

/** The app-API routes the web app adds (server/app-api/client-routes.ts). */
describe.each(STORAGES)('app routes of the web app (%s)', (kind) => {
  let server: TestServer
  let owner: Person
  let agent: Agent
  let orgId: string

  beforeAll(async () => {
    server = await startServer(kind)
    ;({ owner, agent, orgId } = await ownerWithAgent(server.url))
  })
  afterAll(() => server.close())

  const org = (path: string) => `/api/app/orgs/${orgId}${path}`

  describe('invite preview', () => {
    test('tells whose invite a token is, before anyone signs in', async () => {
      const { body } = await owner.request('POST', org('/invites'), {
        email: 'preview@example.test',
        role: 'admin',
      })
      const res = await new Person(server.url).request(
        'GET',
        `/api/app/invites/${body.invite.token}`,
      )
      expect(res.status).toBe(200)
      expect(res.body).toEqual({
        organization: { id: orgId, name: 'Acme' },
        email: 'preview@example.test',
        role: 'admin',
        expiresAt: expect.any(String),
      })
    })

    test('an unknown token is 404 and an accepted one 409', async () => {
      const stranger = new Person(server.url)
      expect((await stranger.request('GET', '/api/app/invites/not-a-token')).status).toBe(404)
      const { body } = await owner.request('POST', org('/invites'), {
        email: 'twice@example.test',
        role: 'member',
      })
      const p = new Person(server.url)
      await p.signUp({ email: 'twice@example.test' })
      await p.request('POST', `/api/app/invites/${body.invite.token}/accept`)
      expect((await stranger.request('GET', `/api/app/invites/${body.invite.token}`)).status).toBe(
        409,
      )
    })
  })

  describe("members' roles and removal", () => {
    test('an owner makes a member admin; an admin cannot make owners; a member cannot change roles', async () => {
      const a = await joinedMember(server.url, owner, 'Role Admin')
      const b = await joinedMember(server.url, owner, 'Role Member')
      const promote = await owner.request('PATCH', org(`/members/${a.user?.id}`), { role: 'admin' })
      expect(promote.status).toBe(200)
      expect(promote.body.member).toMatchObject({ id: a.user?.id, role: 'admin' })
      const byAdmin = await a.request('PATCH', org(`/members/${b.user?.id}`), { role: 'owner' })
      expect(byAdmin.status).toBe(403)
      expect(byAdmin.body.error).toMatch(/owner/)
      expect(
        (await a.request('PATCH', org(`/members/${b.user?.id}`), { role: 'admin' })).status,
      ).toBe(200)
      const c = await joinedMember(server.url, owner, 'Plain Member')
      const byMember = await c.request('PATCH', org(`/members/${a.user?.id}`), { role: 'member' })
      expect(byMember.status).toBe(403)
      const bad = await owner.request('PATCH', org(`/members/${a.user?.id}`), { role: 'boss' })
      expect(bad.status).toBe(400)
      expect(bad.body.error).toMatch(/role/)
    })

    test('the last owner can be neither demoted nor removed', async () => {
      const demote = await owner.request('PATCH', org(`/members/${owner.user?.id}`), {
        role: 'member',
      })
      expect(demote.status).toBe(409)
      const leave = await owner.request('DELETE', org(`/members/${owner.user?.id}`))
      expect(leave.status).toBe(409)
    })

    test('a removed member loses the organisation at once, live connection included', async () => {
      const m = await joinedMember(server.url, owner, 'Soon Gone')
      const token = await m.syncToken(orgId)
      const live = await connectProvider(server.url, boardDocName(orgId), token)
      const closed = new Promise<void>((resolve) => live.provider.on('close', () => resolve()))
      const res = await owner.request('DELETE', org(`/members/${m.user?.id}`))
      expect(res.status).toBe(204)
      await closed
      live.destroy()
      expect((await m.request('GET', org('/members'))).status).toBe(404)
      expect((await m.request('POST', org('/sync-token'))).status).toBe(404)
      // A token fetched while still a member no longer opens the board.
      await expect(connectProvider(server.url, boardDocName(orgId), token)).rejects.toThrow(
        /authentication failed/,
      )
    })

    test('a member may leave; a member may not remove someone else', async () => {
      const a = await joinedMember(server.url, owner, 'Leaves Alone')
      const b = await joinedMember(server.url, owner, 'Stays Here')
      expect((await a.request('DELETE', org(`/members/${b.user?.id}`))).status).toBe(403)
      expect((await a.request('DELETE', org(`/members/${a.user?.id}`))).status).toBe(204)
      const { body } = await owner.request('GET', org('/members'))
      expect(body.members.map((x: { name: string }) => x.name)).not.toContain('Leaves Alone')
    })
  })

  describe('deleting a column as a person', () => {
    test('cards (archived ones included) move to the destination in their order; without one a non-empty column is refused', async () => {
      const { column } = await agent.ok('create_column', { title: 'Doomed' })
      const { columns } = await agent.ok('list_columns')
      const dest = columns[0].id
      const one = (await agent.ok('create_task', { columnId: column.id, title: 'one' })).task.id
      const two = (await agent.ok('create_task', { columnId: column.id, title: 'two' })).task.id
      await agent.ok('archive_task', { taskId: two })
      const refused = await owner.request('DELETE', org(`/columns/${column.id}`))
      expect(refused.status).toBe(400)
      expect(refused.body.error).toMatch(/destinationColumnId/)
      const res = await owner.request(
        'DELETE',
        org(`/columns/${column.id}?destinationColumnId=${dest}`),
      )
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ deleted: true, columnId: column.id, movedCount: 2 })
      expect((await agent.ok('get_task', { taskId: one })).task.columnId).toBe(dest)
      expect((await agent.ok('get_task', { taskId: two })).task.columnId).toBe(dest)
    })

    test('a column with a card actively worked is refused with 409', async () => {
      const { column } = await agent.ok('create_column', { title: 'Busy' })
      const { columns } = await agent.ok('list_columns')
      const { task } = await agent.ok('create_task', { columnId: column.id, title: 'held' })
      await agent.ok('claim_task', { taskId: task.id, agentName: 'Holder' })
      const res = await owner.request(
        'DELETE',
        org(`/columns/${column.id}?destinationColumnId=${columns[0].id}`),
      )
      expect(res.status).toBe(409)
    })
  })

  describe("deleting one's own comment", () => {
    test('a person deletes their comment; an agent’s or another person’s comment is 403; a missing one 404', async () => {
      const { columns } = await agent.ok('list_columns')
      const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: 'talk' })
      const live = await connectProvider(
        server.url,
        cardDocName(orgId, task.id),
        await owner.syncToken(),
      )
      const mine = crypto.randomUUID()
      live.doc.transact(() => {
        const m = new Y.Map<unknown>()
        m.set('taskId', task.id)
        m.set('body', 'mine to delete')
        cardMaps(live.doc).comments.set(mine, m)
      })
      const seen = async (): Promise<string[]> =>
        (await agent.ok('get_task', { taskId: task.id })).comments.map((c: { id: string }) => c.id)
      await until(async () => ((await seen()).includes(mine) ? true : undefined))
      const agents = (await agent.ok('add_comment', { taskId: task.id, body: 'an agent’s' }))
        .comment
      expect((await owner.request('DELETE', org(`/comments/${agents.id}`))).status).toBe(403)
      const other = await joinedMember(server.url, owner, 'Not The Author')
      expect((await other.request('DELETE', org(`/comments/${mine}`))).status).toBe(403)
      expect((await owner.request('DELETE', org(`/comments/${mine}`))).status).toBe(204)
      expect(await seen()).not.toContain(mine)
      await eventually(() => (cardMaps(live.doc).comments.has(mine) ? undefined : true))
      expect((await owner.request('DELETE', org(`/comments/${mine}`))).status).toBe(404)
      live.destroy()
    })
  })

  describe('mind maps as a person', () => {
    test('list (most recently changed first), create, rename and delete maps', async () => {
      const created = await owner.request('POST', org('/maps'), { title: 'Person map' })
      expect(created.status).toBe(201)
      const mapId = created.body.map.id
      await agent.ok('create_map', { title: 'Agent map' })
      const list = await owner.request('GET', org('/maps'))
      expect(list.body.maps.map((m: { title: string }) => m.title).slice(0, 2)).toEqual([
        'Agent map',
        'Person map',
      ])
      const renamed = await owner.request('PATCH', org(`/maps/${mapId}`), { title: 'Renamed map' })
      expect(renamed.status).toBe(200)
      expect((await agent.ok('get_map', { mapId })).map.title).toBe('Renamed map')
      expect((await owner.request('POST', org('/maps'), { title: '' })).status).toBe(400)
      expect((await owner.request('DELETE', org(`/maps/${mapId}`))).status).toBe(204)
      expect((await agent.call('get_map', { mapId })).status).toBe(404)
    })

    test('a node a person drew on the canvas gets an image through the app, then loses it', async () => {
      const { map } = await agent.ok('create_map', { title: 'With pictures' })
      const live = await connectProvider(
        server.url,
        mapDocName(orgId, map.id),
        await owner.syncToken(),
      )
      const nodeId = crypto.randomUUID()
      live.doc.transact(() => {
        const m = new Y.Map<unknown>()
        m.set('text', 'drawn by hand')
        m.set('x', 10)
        m.set('y', 20)
        mapDocMaps(live.doc).nodes.set(nodeId, m)
      })
      const path = org(`/maps/${map.id}/nodes/${nodeId}/image`)
      // The node reaches the server a moment after the local edit.
      await until(async () =>
        (await agent.ok('get_map', { mapId: map.id })).nodes.length ? true : undefined,
      )
      const res = await owner.request('POST', path, { imageBase64: pngBase64(8, 8, [1, 2, 3]) })
      expect(res.status).toBe(200)
      expect(res.body.node.imageUrl).toMatch(/^\/files\/public\/.+\.png$/)
      const file = await fetch(`${server.url}${res.body.node.imageUrl}`)
      expect(file.headers.get('content-type')).toBe('image/png')
      await eventually(() =>
        mapDocMaps(live.doc).nodes.get(nodeId)?.get('imageUrl') ? true : undefined,
      )
      const bad = await owner.request('POST', path, { imageBase64: 'bm90IGFuIGltYWdl' })
      expect(bad.status).toBe(400)
      const cleared = await owner.request('DELETE', path)
      expect(cleared.status).toBe(200)
      expect(cleared.body.node.imageUrl).toBeUndefined()
      const missing = await owner.request(
        'POST',
        org(`/maps/${map.id}/nodes/${crypto.randomUUID()}/image`),
        { imageBase64: pngBase64(8, 8, [1, 2, 3]) },
      )
      expect(missing.status).toBe(404)
      live.destroy()
    })

    test('someone outside the organisation gets 404 for its maps', async () => {
      const stranger = new Person(server.url)
      await stranger.signUp()
      expect((await stranger.request('GET', org('/maps'))).status).toBe(404)
    })
  })
})
