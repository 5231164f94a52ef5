import type { ServerResponse } from 'node:http'

/**
 * The pages of MCP sign-in: plain HTML forms the server renders, which work without the
 * app's JavaScript (an assistant opens them in whatever browser the person has). Every
 * value written into them is escaped: the client's name and redirect URI are whatever a
 * stranger registered.
 */

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  )

const STYLE = `
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f1ea;color:#1f2937}
main{max-width:26rem;margin:4rem auto;background:#fff;border-radius:12px;padding:1.75rem 2rem;box-shadow:0 1px 3px rgba(0,0,0,.12)}
h1{font-size:1.25rem;margin:0 0 1rem}
.brand{font-weight:600;color:#b45309;margin-bottom:.5rem}
label{display:block;margin:.75rem 0 .25rem;font-weight:500}
input,select{width:100%;box-sizing:border-box;padding:.5rem;border:1px solid #d1d5db;border-radius:6px;font:inherit}
.actions{display:flex;gap:.75rem;margin-top:1.25rem}
button{flex:1;padding:.6rem;border-radius:6px;border:1px solid #d1d5db;background:#fff;font:inherit;cursor:pointer}
button.primary{background:#b45309;border-color:#b45309;color:#fff}
.note{color:#6b7280;font-size:.875rem}
.error{background:#fef2f2;color:#991b1b;padding:.5rem .75rem;border-radius:6px}
code{background:#f3f4f6;padding:0 .25rem;border-radius:4px}
`

/**
 * Sends a page. It may not be framed (a consent button under someone else's page is a
 * click stolen) and runs no script at all.
 */
export function sendPage(res: ServerResponse, status: number, title: string, body: string): void {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)} · Corkboard</title><style>${STYLE}</style></head><body><main><div class="brand">Corkboard</div>${body}</main></body></html>`
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
    'cache-control': 'no-store',
    'content-security-policy':
      "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    'x-frame-options': 'DENY',
    // Not no-referrer: with it a browser posts the consent form with `Origin: null`, which
    // the Origin check must refuse. same-origin tells our own pages, and nobody else.
    'referrer-policy': 'same-origin',
  })
  res.end(html)
}

const hidden = (fields: Record<string, string>) =>
  Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
    .join('')

/** A request this page cannot act on, shown rather than redirected (the redirect is not trusted). */
export function errorPage(res: ServerResponse, status: number, message: string): void {
  sendPage(
    res,
    status,
    'Sign-in failed',
    `<h1>This sign-in request cannot go on</h1><p class="error">${escapeHtml(message)}</p><p class="note">Start again from the app that sent you here.</p>`,
  )
}

export function signInPage(
  res: ServerResponse,
  input: { returnTo: string; clientName: string; error?: string; status?: number; email?: string },
): void {
  sendPage(
    res,
    input.status ?? 200,
    'Sign in',
    `<h1>Sign in to connect ${escapeHtml(input.clientName)}</h1>
${input.error ? `<p class="error">${escapeHtml(input.error)}</p>` : ''}
<form method="post" action="/oauth/sign-in">
${hidden({ return: input.returnTo })}
<label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(input.email ?? '')}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>`,
  )
}

export function consentPage(
  res: ServerResponse,
  input: {
    clientName: string
    redirectHost: string
    email: string
    organizations: readonly { id: string; name: string }[]
    fields: Record<string, string>
  },
): void {
  const options = input.organizations
    .map((o) => `<option value="${escapeHtml(o.id)}">${escapeHtml(o.name)}</option>`)
    .join('')
  sendPage(
    res,
    200,
    'Connect an app',
    `<h1>Connect ${escapeHtml(input.clientName)} to your board?</h1>
<p><strong>${escapeHtml(input.clientName)}</strong> (returning to <code>${escapeHtml(input.redirectHost)}</code>) asks to work on a board as you: read and change cards, comments, claims and mind maps, as a member does. Its changes are shown as “${escapeHtml(input.clientName)} via ${escapeHtml(input.email)}”.</p>
<p class="note">Only approve a request you started yourself. You can disconnect it at any time in Settings.</p>
<form method="post" action="/oauth/authorize">
${hidden(input.fields)}
<label for="org">Organisation</label><select id="org" name="org_id">${options}</select>
<div class="actions"><button type="submit" name="decision" value="deny">Deny</button><button class="primary" type="submit" name="decision" value="approve">Approve</button></div>
</form>`,
  )
}
