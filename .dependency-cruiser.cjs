// The project's layering, checked by the test command (npm run check): no import circles,
// and no module importing from a layer above its own. Lowest first; within the domain
// layer each folder may use the ones listed before it. docs/design.md, "Layout".
const layers = [
  ['^shared/'],
  ['^persistence/'],
  [
    '^server/(errors|clock|config|sweeper|collector)\\.ts$',
    '^server/http/',
    '^server/images/',
    '^server/metrics/',
  ],
  ['^server/live/'],
  ['^server/rate-limit/'],
  ['^server/auth/'],
  ['^server/files/'],
  ['^server/claims/'],
  ['^server/changes/'],
  ['^server/board/'],
  ['^server/webhooks/'],
  ['^server/upgrades/'],
  ['^server/transfer/'],
  ['^server/review/'],
  ['^server/actions/'],
  ['^server/faces/'],
  ['^server/(app|main)\\.ts$'],
]

const names = ['shared', 'persistence', 'server basics', 'live', 'rate-limit', 'auth', 'files']
  .concat(['claims', 'changes', 'board', 'webhooks', 'upgrades', 'transfer', 'review', 'actions'])
  .concat(['faces'])
  .concat(['app'])

const upward = layers.slice(0, -1).map((paths, i) => ({
  name: `${names[i]}-imports-above`,
  comment: `${names[i]} may import only from layers below it (.dependency-cruiser.cjs)`,
  severity: 'error',
  from: { path: paths },
  to: { path: layers.slice(i + 1).flat() },
}))

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import circle: split the shared part out below both',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      name: 'client-imports-server',
      comment: 'The web app runs in a browser: it may use shared/ only',
      severity: 'error',
      from: { path: '^client/' },
      to: { path: '^(server|persistence)/' },
    },
    {
      name: 'shared-imports-node',
      comment: 'shared/ runs in the browser too: no node: modules',
      severity: 'error',
      from: { path: '^shared/' },
      to: { dependencyTypes: ['core'] },
    },
  ],
  options: {
    // TypeScript 7's compiler has no JavaScript API; swc reads TypeScript for the cruiser.
    parser: 'swc',
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(client/dist|node_modules)/' },
  },
}
