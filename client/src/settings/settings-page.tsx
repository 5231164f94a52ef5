import { Link } from '../router.tsx'
import { ArchiveIcon, FolderIcon, KeyIcon, UsersIcon, WebhookIcon } from '../ui/icons.tsx'
import { useWorkspace } from '../workspace.tsx'
import { ApiKeys } from './api-keys.tsx'
import { DataSettings } from './data.tsx'
import { Members } from './members.tsx'
import { Projects } from './projects.tsx'
import { Webhooks } from './webhooks.tsx'

const TABS = [
  { id: 'members', label: 'Members & invites', icon: <UsersIcon size={15} /> },
  { id: 'keys', label: 'API keys', icon: <KeyIcon size={15} /> },
  { id: 'webhooks', label: 'Webhooks', icon: <WebhookIcon size={15} /> },
  { id: 'projects', label: 'Projects', icon: <FolderIcon size={15} /> },
  { id: 'data', label: 'Data', icon: <ArchiveIcon size={15} /> },
] as const

/** Administration: members and invites, API keys, webhooks, projects, export and import. */
export function SettingsPage({ tab }: { tab: string }) {
  const { org } = useWorkspace()
  const found = TABS.find((t) => t.id === tab)
  const current = found ?? TABS[0]
  return (
    <div className="settings-page">
      <header className="page-header">
        <h1 className="page-title">Settings</h1>
        <span className="muted">{org.name}</span>
      </header>
      <div className="settings-layout">
        <nav className="settings-nav" aria-label="Settings sections">
          <ul>
            {TABS.map((t) => (
              <li key={t.id}>
                <Link
                  to={`/o/${org.id}/settings/${t.id}`}
                  className={`nav-link${t.id === found?.id ? ' active' : ''}`}
                  aria-current={t.id === found?.id ? 'page' : undefined}
                >
                  {t.icon}
                  {t.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        {!found ? (
          <section className="settings-content" aria-label="Unknown settings page">
            <div className="notice" role="alert">
              <p>
                There is no settings page “{tab}”. Choose one of the sections:{' '}
                {TABS.map((t, i) => (
                  <span key={t.id}>
                    {i > 0 && ', '}
                    <Link to={`/o/${org.id}/settings/${t.id}`}>{t.label}</Link>
                  </span>
                ))}
                .
              </p>
            </div>
          </section>
        ) : (
          <section className="settings-content" aria-label={current.label}>
            {current.id === 'members' && <Members />}
            {current.id === 'keys' && <ApiKeys />}
            {current.id === 'webhooks' && <Webhooks />}
            {current.id === 'projects' && <Projects />}
            {current.id === 'data' && <DataSettings />}
          </section>
        )}
      </div>
    </div>
  )
}
