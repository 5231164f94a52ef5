import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { png } from '../images/fixtures.ts'
import { Agent, connectProvider, eventually, Person } from '../support/client.ts'
import { seededOrg } from '../support/fixtures.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/** A node's image: another size and other bytes than the screenshot's. */
const NODE_PNG = Buffer.from(png({ width: 48, height: 40, seed: 3 }))

/** A 1×1 PNG, structurally valid (every chunk CRC correct). */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='

async function download(person: Person, orgId = person.orgId): Promise<Response> {
  return fetch(`${person.url}/api/app/orgs/${orgId}/export`, { headers: { cookie: person.cookie } })
}

async function exported(person: Person): Promise<Buffer> {
  const res = await download(person)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('application/gzip')
  return Buffer.from(await res.arrayBuffer())
}

async function upload(
  person: Person,
  bytes: Buffer,
  options: { dryRun?: boolean; headers?: Record<string, string>; orgId?: string } = {},
) {
  const res = await fetch(
    `${person.url}/api/app/orgs/${options.orgId ?? person.orgId}/import${options.dryRun ? '?dryRun=1' : ''}`,
    {
      method: 'POST',
      headers: {
        cookie: person.cookie,
        'content-type': 'application/octet-stream',
        ...options.headers,
      },
      body: new Uint8Array(bytes),
    },
  )
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined }
}

/** The archive unpacked by the system's tar: entry name → bytes. */
function unpack(archive: Buffer): Map<string, Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'cb-export-'))
  try {
    writeFileSync(join(dir, 'a.tar.gz'), archive)
    execFileSync('tar', ['-xzf', 'a.tar.gz', '-C', dir], { cwd: dir })
    const names = execFileSync('tar', ['-tzf', 'a.tar.gz'], { cwd: dir })
      .toString()
      .trim()
      .split('\n')
    const out = new Map<string, Buffer>()
    for (const name of names) out.set(name, readFileSync(join(dir, name)))
    return out
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A tar made by the system's tar from entries, in order, gzipped. */
function pack(entries: Map<string, Buffer>): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'cb-pack-'))
  try {
    for (const [name, bytes] of entries) {
      execFileSync('mkdir', ['-p', join(dir, name, '..')])
      writeFileSync(join(dir, name), bytes)
    }
    execFileSync('tar', ['--format=ustar', '-cf', 'out.tar', ...entries.keys()], { cwd: dir })
    return gzipSync(readFileSync(join(dir, 'out.tar')))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const lines = (b: Buffer | undefined) =>
  (b ?? Buffer.alloc(0))
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l))

/** Every record of one kind, all its parts read in order. */
function records(entries: Map<string, Buffer>, kind: string): any[] {
  return [...entries.keys()]
    .filter((n) => n.startsWith(`${kind}/`))
    .sort()
    .flatMap((n) => lines(entries.get(n)))
}

describe.each(STORAGES)('export and import (%s)', (kind) => {
  let a: TestServer
  let b: TestServer
  let owner: Person
  let agent: Agent
  let archive: Buffer
  let ids: { card: string; archived: string; map: string; node: string; blocker: string }

  beforeAll(async () => {
    a = await startServer(kind)
    b = await startServer(kind)
    const seeded = await seededOrg(a.url)
    owner = seeded.owner
    agent = seeded.agent
    const projectId = await owner.createProject('Apollo')
    const { task: blocker } = await agent.ok('create_task', {
      columnId: seeded.ready,
      title: 'Blocker',
      description: 'first this',
    })
    const { task } = await agent.ok('create_task', {
      columnId: seeded.backlog,
      title: 'Ship the export',
      description: 'Every field, **kept**.\nLine two — ünïcödé',
      priority: 'high',
      projectId,
    })
    await agent.ok('set_task_tags', { taskId: task.id, tags: ['data', 'export'] })
    await agent.ok('set_task_dependencies', { taskId: task.id, blockedBy: [blocker.id] })
    await agent.ok('add_comment', { taskId: task.id, body: 'an agent speaks' })
    await new Agent(a.url, await owner.createKey('second')).ok('add_comment', {
      taskId: task.id,
      body: 'a person answers',
    })
    await agent.ok('attach_screenshot', { taskId: task.id, imageBase64: PNG, filename: 'shot.png' })
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Ada' })
    const { task: old } = await agent.ok('create_task', {
      columnId: seeded.done,
      title: 'Done long ago',
      description: 'archived words',
    })
    await agent.ok('add_comment', { taskId: old.id, body: 'before archiving' })
    await agent.ok('archive_task', { taskId: old.id })
    const { map } = await agent.ok('create_map', { title: 'Plan' })
    const { node } = await agent.ok('create_node', { mapId: map.id, text: 'root' })
    const { node: leaf } = await agent.ok('create_node', { mapId: map.id, text: 'leaf' })
    await agent.ok('create_edge', { mapId: map.id, sourceId: node.id, targetId: leaf.id })
    // Another size and other bytes than the screenshot's: an import reads its entries into
    // one reused buffer, and the round trip compares every file's bytes.
    await agent.ok('set_node_image', {
      nodeId: node.id,
      imageBase64: NODE_PNG.toString('base64'),
    })
    const hook = await owner.request('POST', `/api/app/orgs/${owner.orgId}/webhooks`, {
      url: 'https://receiver.example.com/hook',
      events: ['card.created'],
    })
    expect(hook.status).toBe(201)
    ids = { card: task.id, archived: old.id, map: map.id, node: node.id, blocker: blocker.id }
    archive = await exported(owner)
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
  })

  test('the export is a tar.gz standard tools read, with a manifest whose SHA-256s match every entry', async () => {
    const entries = unpack(archive)
    const names = [...entries.keys()]
    expect(names[0]).toBe('organization.json')
    expect(names.at(-1)).toBe('manifest.json')
    const manifest = JSON.parse(entries.get('manifest.json')?.toString() ?? '{}')
    expect(manifest).toMatchObject({ format: 'corkboard-export', version: 1, orgId: owner.orgId })
    expect(manifest.entries.map((e: { name: string }) => e.name)).toEqual(names.slice(0, -1))
    for (const e of manifest.entries) {
      const bytes = entries.get(e.name) as Buffer
      expect(bytes.length).toBe(e.size)
      const { createHash } = await import('node:crypto')
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(e.sha256)
    }
    expect(manifest.counts).toMatchObject({
      cards: 2,
      archived: 1,
      comments: 3,
      attachments: 1,
      claims: 1,
      maps: 1,
      nodes: 2,
      edges: 1,
      webhooks: 1,
      files: 2,
      projects: 1,
      columns: 4,
      members: 1,
      apiKeys: 2,
    })
  })

  test('the export holds descriptions, blockers, stats, comments, screenshot bytes, claims, maps, and no secret', () => {
    const entries = unpack(archive)
    const card = records(entries, 'cards').find((c) => c.id === ids.card)
    expect(card.description).toBe('Every field, **kept**.\nLine two — ünïcödé')
    expect(card.card.blockedBy).toEqual([ids.blocker])
    expect(card.card.stats.commentCount).toBe(2)
    expect(card.comments.map((c: { body: string }) => c.body)).toEqual([
      'an agent speaks',
      'a person answers',
    ])
    const shot = card.attachments[0]
    const bytes = [...entries].find(([n]) => n.startsWith(`files/${shot.id}.`))?.[1]
    expect(bytes?.toString('base64')).toBe(PNG)
    const archived = records(entries, 'archived')
    expect(archived.map((x) => [x.id, x.description, x.comments.length])).toEqual([
      [ids.archived, 'archived words', 1],
    ])
    expect(records(entries, 'claims')).toMatchObject([{ taskId: ids.card, agentName: 'Ada' }])
    const [map] = records(entries, 'maps')
    expect(map.nodes.map((n: { text: string }) => n.text).sort()).toEqual(['leaf', 'root'])
    expect(map.edges).toHaveLength(1)
    const text = [...entries.values()].map((x) => x.toString('latin1')).join('')
    expect(text).not.toMatch(/whsec_|password|key_hash|scrypt/)
    expect(records(entries, 'members')).toMatchObject([{ email: owner.user?.email, role: 'owner' }])
  })

  test('a round trip through another server loses nothing: its export holds the same content', async () => {
    const there = new Person(b.url)
    await there.signUp({ email: owner.user?.email as string, organizationName: 'Moved' })
    const preview = await upload(there, archive, { dryRun: true })
    expect(preview.status).toBe(200)
    expect(preview.body).toMatchObject({ dryRun: true, counts: { cards: 2, comments: 3 } })
    // The preview wrote nothing.
    const [held] = await b.storage.db.query<{ n: number }>(
      'select count(*)::int as n from task_texts where org_id = $1',
      [there.orgId],
    )
    expect(held?.n).toBe(0)

    const done = await upload(there, archive)
    expect(done.status, JSON.stringify(done.body)).toBe(200)
    expect(done.body.counts).toMatchObject({ cards: 2, archived: 1, comments: 3, files: 2 })
    expect(done.body.notes.join(' ')).toMatch(/API keys .* never authenticate/)

    const again = unpack(await exported(there))
    const first = unpack(archive)
    const same = (name: string) =>
      !['organization.json', 'manifest.json'].includes(name) && !name.startsWith('members/')
    const swap = (b: Buffer) => b.toString('utf8').replaceAll(owner.orgId, there.orgId)
    const names = [...first.keys()].filter(same)
    expect([...again.keys()].filter(same)).toEqual(names)
    for (const name of names) {
      if (name.startsWith('files/'))
        expect(again.get(name)?.equals(first.get(name) as Buffer)).toBe(true)
      else expect(again.get(name)?.toString('utf8'), name).toBe(swap(first.get(name) as Buffer))
    }
    const counts = (m: Map<string, Buffer>) => {
      const c = JSON.parse(m.get('manifest.json')?.toString() ?? '{}').counts
      delete c.members
      return c
    }
    expect(counts(again)).toEqual(counts(first))
  })

  test('the archive’s members who are not members here are invited with their role (an owner as admin), each link shown once, and a preview invites no one', async () => {
    const founder = new Person(a.url)
    await founder.signUp({ organizationName: 'Team to move' })
    const join = async (role: 'admin' | 'member') => {
      const person = new Person(a.url)
      await person.signUp()
      const made = await founder.request('POST', `/api/app/orgs/${founder.orgId}/invites`, {
        email: person.user?.email,
        role,
      })
      await person.request('POST', `/api/app/invites/${made.body.invite.token}/accept`)
      return person.user?.email as string
    }
    const admin = await join('admin')
    const member = await join('member')
    const teamArchive = await exported(founder)

    const mover = new Person(b.url)
    await mover.signUp({ organizationName: 'Moved team' })
    const preview = await upload(mover, teamArchive, { dryRun: true })
    expect(preview.status).toBe(200)
    const expected = [
      { email: founder.user?.email, role: 'admin' },
      { email: admin, role: 'admin' },
      { email: member, role: 'member' },
    ]
    const byEmail = (list: { email: string }[]) =>
      [...list].sort((x, y) => x.email.localeCompare(y.email))
    expect(byEmail(preview.body.invites)).toEqual(
      byEmail(expected.map((e) => ({ ...e, token: null, expiresAt: null })) as never),
    )
    const pending = async () =>
      (await mover.request('GET', `/api/app/orgs/${mover.orgId}/members`)).body.invites
    expect(await pending()).toEqual([])

    const done = await upload(mover, teamArchive)
    expect(done.status, JSON.stringify(done.body)).toBe(200)
    expect(byEmail(done.body.invites)).toMatchObject(byEmail(expected as never))
    expect(done.body.notes.join(' ')).toMatch(/3 people .* invited .* an owner is invited as admin/)
    expect(byEmail(await pending())).toMatchObject(byEmail(expected as never))

    // The member signs up on this server and follows their link: in, with their role.
    const arriving = new Person(b.url)
    await arriving.signUp({ email: member })
    const invite = done.body.invites.find((i: { email: string }) => i.email === member)
    const accepted = await arriving.request('POST', `/api/app/invites/${invite.token}/accept`)
    expect(accepted.status).toBe(200)
    expect(accepted.body).toMatchObject({ organization: { id: mover.orgId }, role: 'member' })
  })

  test('after an import the live documents and reads show the imported organisation', async () => {
    // Into a third server: a fresh database, then read it back through the agent endpoint.
    const c = await startServer(kind)
    try {
      const p = new Person(c.url)
      await p.signUp()
      // Read before the import: what this process keeps of the organisation is read again.
      const reader = new Agent(c.url, await p.createKey('reader'))
      expect((await reader.ok('get_board')).tasks).toEqual([])
      // The app has the board open while the import runs: its copy is replaced.
      const before = await connectProvider(c.url, `${p.orgId}/board`, await p.syncToken())
      let closed = ''
      before.provider.on('close', ({ event }: { event: { reason: string } }) => {
        closed ||= event.reason
      })
      expect((await upload(p, archive)).status).toBe(200)
      // Read at once, before any card document is opened here.
      const first = await reader.ok('get_task', { taskId: ids.card })
      expect(first.task.description).toBe('Every field, **kept**.\nLine two — ünïcödé')
      expect(await eventually(() => closed || undefined)).toMatch(/re-based/)
      before.destroy()
      const boardNow = await connectProvider(c.url, `${p.orgId}/board`, await p.syncToken())
      expect(boardNow.doc.getMap('tasks').has(ids.card)).toBe(true)
      expect(boardNow.doc.getMap('projects').size).toBe(1)
      boardNow.destroy()
      const card = await connectProvider(c.url, `${p.orgId}/tasks/${ids.card}`, await p.syncToken())
      expect(card.doc.getText('description').toString()).toBe(
        'Every field, **kept**.\nLine two — ünïcödé',
      )
      expect(card.doc.getMap('comments').size).toBe(2)
      card.destroy()
      const board = await reader.ok('get_board')
      expect(board.tasks.map((t: { title: string }) => t.title).sort()).toEqual([
        'Blocker',
        'Ship the export',
      ])
      const task = await reader.ok('get_task', { taskId: ids.card })
      expect(task.task.description).toBe('Every field, **kept**.\nLine two — ünïcödé')
      expect(task.comments.map((x: { body: string }) => x.body)).toEqual([
        'an agent speaks',
        'a person answers',
      ])
      expect(task.attachments).toHaveLength(1)
      const shot = await fetch(new URL(task.attachments[0].url, c.url))
      expect(Buffer.from(await shot.arrayBuffer()).toString('base64')).toBe(PNG)
      const old = await reader.ok('get_task', { taskId: ids.archived })
      expect(old.task.description).toBe('archived words')
      expect(old.task.archivedAt).not.toBeNull()
      const found = await reader.ok('search_tasks', {
        query: 'archived words',
        includeArchived: true,
      })
      expect(JSON.stringify(found)).toContain(ids.archived)
      const map = await reader.ok('get_map', { mapId: ids.map })
      const root = map.nodes.find((n: { id: string }) => n.id === ids.node)
      expect(root.imageUrl).toContain(`/files/public/${p.orgId}/`)
      const image = await fetch(new URL(root.imageUrl, c.url))
      expect(image.status).toBe(200)
      expect(Buffer.from(await image.arrayBuffer()).equals(NODE_PNG)).toBe(true)
      expect(board.activity ?? []).toEqual(
        expect.arrayContaining([expect.objectContaining({ taskId: ids.card, agentName: 'Ada' })]),
      )
      // A new card goes on the imported board, beside what was imported.
      const { columns } = await reader.ok('list_columns')
      await reader.ok('create_task', { columnId: columns[0].id, title: 'after the move' })
      expect((await reader.ok('get_board')).tasks).toHaveLength(3)
      // Ids are kept: the same archive does not import beside the organisation it made.
      const second = new Person(c.url)
      await second.signUp({ organizationName: 'Beside' })
      const beside = await upload(second, archive)
      expect(beside.status).toBe(409)
      expect(beside.body.error).toMatch(/ids are in use on this server/)
    } finally {
      await c.close()
    }
  })

  test('a bad, truncated or altered archive is refused naming what is wrong, and nothing is written', async () => {
    // A server that never saw the archive's ids: each refusal is the archive's own fault.
    const fresh = await startServer(kind)
    try {
      await refusals(fresh)
    } finally {
      await fresh.close()
    }
  })

  async function refusals(server: TestServer): Promise<void> {
    const there = new Person(server.url)
    await there.signUp({ organizationName: 'Untouched' })
    const entries = unpack(archive)
    const cardPart = [...entries.keys()].find((n) => n.startsWith('cards/')) as string
    const altered = new Map(entries)
    altered.set(
      cardPart,
      Buffer.from((entries.get(cardPart) as Buffer).toString().replace('kept', 'lost')),
    )
    const noManifest = new Map(entries)
    noManifest.delete('manifest.json')
    const tar = gunzipSync(archive)
    const cases: [string, Buffer, RegExp][] = [
      ['not gzip', Buffer.from('hello, this is not an archive'), /not gzip/],
      ['truncated', archive.subarray(0, Math.floor(archive.length / 2)), /truncated|damaged|ends/],
      ['truncated tar', gzipSync(tar.subarray(0, tar.length - 2048)), /truncated|ends/],
      ['altered', pack(altered), new RegExp(`${cardPart}.*SHA-256`)],
      ['no manifest', pack(noManifest), /without manifest\.json/],
    ]
    for (const [what, bytes, message] of cases) {
      const res = await upload(there, bytes)
      expect(res.status, what).toBe(400)
      expect(res.body.error, what).toMatch(message)
    }
    // Nothing of it was written: the organisation is as new.
    const reader = new Agent(server.url, await there.createKey('check'))
    expect((await reader.ok('get_board')).tasks).toEqual([])
    const [row] = await server.storage.db.query<{ n: number }>(
      `select (select count(*) from task_texts where org_id = $1)
            + (select count(*) from comments where org_id = $1)
            + (select count(*) from files where org_id = $1)
            + (select count(*) from maps where org_id = $1) as n`,
      [there.orgId],
    )
    expect(Number(row?.n)).toBe(0)
    // And the same archive, whole, then imports.
    expect((await upload(there, archive)).status).toBe(200)
  }

  test('an import into an organisation that holds cards is refused (409)', async () => {
    const res = await upload(owner, archive)
    expect(res.status).toBe(409)
    expect(res.body.error).toMatch(/empty organisation/)
  })

  test('a member may not export or import (403), an outsider does not see the organisation (404)', async () => {
    const member = new Person(a.url)
    await member.signUp()
    const invite = await owner.request('POST', `/api/app/orgs/${owner.orgId}/invites`, {
      email: member.user?.email,
      role: 'member',
    })
    await member.request('POST', `/api/app/invites/${invite.body.invite.token}/accept`)
    expect((await download(member, owner.orgId)).status).toBe(403)
    expect((await upload(member, archive, { orgId: owner.orgId })).status).toBe(403)
    const outsider = new Person(a.url)
    await outsider.signUp()
    expect((await download(outsider, owner.orgId)).status).toBe(404)
    expect((await upload(outsider, archive, { orgId: owner.orgId })).status).toBe(404)
  })

  test('an import sent by a page on another site is refused like every cookie write', async () => {
    const there = new Person(b.url)
    await there.signUp()
    const cross = await upload(there, archive, { headers: { 'sec-fetch-site': 'cross-site' } })
    expect(cross.status).toBe(403)
    const origin = await upload(there, archive, { headers: { origin: 'https://evil.example' } })
    expect(origin.status).toBe(403)
    const form = await upload(there, archive, { headers: { 'content-type': 'text/plain' } })
    expect(form.status).toBe(415)
  })

  test('an archive over IMPORT_MAX_BYTES is refused with 413', async () => {
    const small = await startServer(kind, { importMaxBytes: 1024 })
    try {
      const p = new Person(small.url)
      await p.signUp()
      const res = await upload(p, archive)
      expect(res.status).toBe(413)
      expect(res.body.error).toMatch(/IMPORT_MAX_BYTES/)
    } finally {
      await small.close()
    }
  })
})
