-- Mind maps: the list behind list_maps. The nodes and edges live in each map's document
-- (`<orgId>/maps/<id>`); this row is updated in the same transaction as every map write.
-- A deleted map keeps its row (deleted_at set) so its document name is never reused or
-- reopened.
create table maps (
  id uuid primary key,
  org_id uuid not null references organizations (id) on delete cascade,
  title text not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  deleted_at timestamptz
);
create index maps_org_recent on maps (org_id, updated_at desc) where deleted_at is null;

-- Which map holds a node or an edge, so actions that send only nodeId or edgeId find their
-- document. Written in the same transaction as the document change; a row outlives its
-- node or edge (the document says whether it still exists) and goes with its map.
create table map_items (
  id uuid primary key,
  org_id uuid not null,
  map_id uuid not null references maps (id) on delete cascade,
  kind text not null check (kind in ('node', 'edge'))
);
create index map_items_map on map_items (map_id);

-- Stored files (node images, card screenshots). Postgres is the default store, so every
-- server process sees the same files; server/files/store.ts is the seam for another store.
-- public files are served to anyone at /files/public/<id>.<ext>; private ones only through
-- a signed, expiring link.
create table files (
  id uuid primary key,
  org_id uuid not null references organizations (id) on delete cascade,
  visibility text not null check (visibility in ('public', 'private')),
  mime_type text not null,
  extension text not null,
  size integer not null,
  sha256 text not null,
  data bytea not null,
  created_at timestamptz not null default now()
);
create index files_org on files (org_id);
