import { lazy, Suspense, useEffect } from 'react'
import { BoardPage } from './board/board-page.tsx'
import { forgetLocalCopies } from './live/org-live.ts'
import { Link, matchPath, navigate, useLocation } from './router.tsx'
import { rememberOrg, session, useSession } from './session.ts'
import { SettingsPage } from './settings/settings-page.tsx'
import { Avatar } from './ui/avatar.tsx'
import { BoardIcon, ChevronDownIcon, LogOutIcon, MapIcon, SettingsIcon } from './ui/icons.tsx'
import { Menu } from './ui/menu.tsx'
import { SyncIndicator } from './ui/sync-indicator.tsx'
import { useWorkspace, WorkspaceProvider } from './workspace.tsx'

// The canvas library is only needed on a map: keep it out of the board's first load.
const MapsPage = lazy(() => import('./maps/maps-page.tsx'))

session.onSignOut((userId) => forgetLocalCopies(userId))

/** The signed-in app for one organisation: navigation on the left, the page on the right. */
export function Shell({ orgId }: { orgId: string }) {
  const s = useSession()
  if (s.status !== 'signed-in') return null
  const org = s.organizations.find((o) => o.id === orgId)
  if (!org) {
    return (
      <div className="auth-page">
        <div className="auth-card">
          <h1>Not found</h1>
          <p>This organisation does not exist or you are not a member of it.</p>
          <Link className="btn btn-primary" to="/">
            Go to your board
          </Link>
        </div>
      </div>
    )
  }
  return (
    <WorkspaceProvider key={org.id} org={org} user={s.user}>
      <Layout />
    </WorkspaceProvider>
  )
}

function Layout() {
  const { org, live, user } = useWorkspace()
  const s = useSession()
  const { pathname } = useLocation()
  const base = `/o/${org.id}`
  useEffect(() => rememberOrg(org.id), [org.id])

  const section = pathname.slice(base.length).split('/')[1] ?? 'board'
  const nav = [
    { to: `${base}/board`, label: 'Board', icon: <BoardIcon />, active: section === 'board' },
    { to: `${base}/maps`, label: 'Mind maps', icon: <MapIcon />, active: section === 'maps' },
    {
      to: `${base}/settings/members`,
      label: 'Settings',
      icon: <SettingsIcon />,
      active: section === 'settings',
    },
  ]
  const orgs = s.status === 'signed-in' ? s.organizations : []

  let page: React.ReactNode
  const map = matchPath('/o/:orgId/maps/:mapId', pathname)
  if (section === 'maps') {
    page = (
      <Suspense fallback={<div className="page-loading">Loading mind maps…</div>}>
        <MapsPage mapId={map?.mapId} />
      </Suspense>
    )
  } else if (section === 'settings') {
    page = <SettingsPage tab={pathname.split('/')[4] ?? 'members'} />
  } else {
    page = <BoardPage />
  }

  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <nav className="sidebar" aria-label="Main">
        <div className="org-switcher">
          <span className="brand-mark" aria-hidden="true" />
          <span className="org-name" title={org.name}>
            {org.name}
          </span>
          {orgs.length > 1 && (
            <Menu
              label="Switch organisation"
              trigger={<ChevronDownIcon />}
              items={orgs.map((o) => ({
                label: `${o.name}${o.id === org.id ? ' (current)' : ''}`,
                disabled: o.id === org.id,
                onSelect: () => navigate(`/o/${o.id}/board`),
              }))}
            />
          )}
        </div>
        <ul className="nav-list">
          {nav.map((n) => (
            <li key={n.label}>
              <Link
                to={n.to}
                className={`nav-link${n.active ? ' active' : ''}`}
                aria-current={n.active ? 'page' : undefined}
              >
                {n.icon}
                <span className="nav-label">{n.label}</span>
              </Link>
            </li>
          ))}
        </ul>
        <div className="sidebar-foot">
          <SyncIndicator live={live} />
          <div className="user-row">
            <Avatar id={user.id} name={user.name} size={26} />
            <span className="user-text">
              <span className="user-name">{user.name}</span>
              <span className="user-email">{user.email}</span>
            </span>
            <button
              type="button"
              className="icon-btn"
              aria-label="Log out"
              title="Log out"
              onClick={() => void session.logout().then(() => navigate('/login'))}
            >
              <LogOutIcon />
            </button>
          </div>
        </div>
      </nav>
      <main id="main" className="main" tabIndex={-1}>
        {page}
      </main>
    </div>
  )
}
