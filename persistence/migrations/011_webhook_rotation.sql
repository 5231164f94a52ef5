-- Secret rotation: after a rotation every delivery is signed with the new secret and,
-- until previous_secret_expires_at, with the one it replaced too, so receivers can switch
-- over without losing a delivery. Kept like secret (needed in the clear to sign) and never
-- shown again. A second rotation within the window overwrites previous_secret with the
-- secret it rotates out: only two secrets are ever valid at once.
alter table webhooks add column previous_secret text;
alter table webhooks add column previous_secret_expires_at timestamptz;
alter table webhooks add constraint webhooks_previous_secret_pair
  check ((previous_secret is null) = (previous_secret_expires_at is null));
