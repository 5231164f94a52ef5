import { useState } from 'react'
import { CopyButton } from '../ui/copy-button.tsx'

/** A shell argument in single quotes, safe whatever the text holds. */
const shellQuoted = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`

interface Setup {
  id: string
  label: string
  /** What the snippet is for, in a sentence. */
  hint: string
  text: string
}

/**
 * How to use a key just made, ready to paste with the key and this service's address in
 * place: Claude Code's one-liner, the MCP configuration for clients that speak Streamable
 * HTTP, the stdio command's configuration, and a first call with curl.
 */
export function setupsFor(key: string, origin: string): Setup[] {
  const mcpUrl = `${origin}/mcp`
  return [
    {
      id: 'claude',
      label: 'Claude Code',
      hint: 'Run in a terminal: adds the board as an MCP server over HTTP.',
      text: `claude mcp add --transport http corkboard ${shellQuoted(mcpUrl)} --header ${shellQuoted(`Authorization: Bearer ${key}`)}`,
    },
    {
      id: 'mcp-http',
      label: 'MCP over HTTP',
      hint: 'For MCP clients configured with JSON that speak Streamable HTTP (Cursor, VS Code, Claude Desktop with a remote server).',
      text: JSON.stringify(
        {
          mcpServers: {
            corkboard: { type: 'http', url: mcpUrl, headers: { Authorization: `Bearer ${key}` } },
          },
        },
        null,
        2,
      ),
    },
    {
      id: 'mcp-stdio',
      label: 'MCP over stdio',
      hint: 'For clients that start a command: point the two paths at a checkout of Corkboard (after npm install); it forwards every call to this service.',
      text: JSON.stringify(
        {
          mcpServers: {
            corkboard: {
              command: '/path/to/corkboard/node_modules/.bin/node',
              args: ['/path/to/corkboard/server/faces/mcp/stdio.ts', '--url', origin],
              env: { CORKBOARD_API_KEY: key },
            },
          },
        },
        null,
        2,
      ),
    },
    {
      id: 'curl',
      label: 'curl',
      hint: 'A first call to the agent endpoint: who the key is, and its organisation.',
      text: `curl -s ${shellQuoted(`${origin}/api/agent`)} -H ${shellQuoted(`Authorization: Bearer ${key}`)} -H 'Content-Type: application/json' -d '{"action":"whoami","params":{}}'`,
    },
  ]
}

/** The set-ups of a new key, one shown at a time, each with its own copy button. */
export function KeyUsage({ apiKey }: { apiKey: string }) {
  const setups = setupsFor(apiKey, location.origin)
  const [shown, setShown] = useState(setups[0]?.id)
  const setup = setups.find((s) => s.id === shown) ?? setups[0]
  if (!setup) return null
  return (
    <div className="key-usage" data-testid="key-usage">
      <div className="key-usage-tabs" role="tablist" aria-label="Use the key with">
        {setups.map((s) => (
          <button
            key={s.id}
            type="button"
            role="tab"
            id={`key-usage-tab-${s.id}`}
            aria-selected={s.id === setup.id}
            aria-controls="key-usage-panel"
            className={`btn btn-small ${s.id === setup.id ? 'btn-primary' : 'btn-ghost'}`}
            onClick={() => setShown(s.id)}
          >
            {s.label}
          </button>
        ))}
      </div>
      <div
        id="key-usage-panel"
        role="tabpanel"
        aria-labelledby={`key-usage-tab-${setup.id}`}
        className="key-usage-panel"
      >
        <p className="muted small">{setup.hint}</p>
        <pre className="key-usage-snippet" data-testid={`key-usage-${setup.id}`}>
          {setup.text}
        </pre>
        <CopyButton text={setup.text} label={`Copy ${setup.label} set-up`} />
      </div>
    </div>
  )
}
