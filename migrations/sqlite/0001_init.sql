-- Tenants, their API keys, the change log that serving processes follow, and the audit log.
-- Portable types only (TEXT, BIGINT): the store reads both dialects through sqlx's Any
-- driver. Times are milliseconds since the Unix epoch; key digests are lowercase hex SHA-256;
-- the settings, scopes and allow-lists are JSON text.

CREATE TABLE tenants (
    slug        TEXT    NOT NULL PRIMARY KEY,
    name        TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    auth        TEXT    NOT NULL,
    settings    TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL
);

CREATE TABLE api_keys (
    tenant      TEXT    NOT NULL REFERENCES tenants (slug),
    id          TEXT    NOT NULL,
    digest      TEXT    NOT NULL,
    scopes      TEXT    NOT NULL,
    allow       TEXT,
    expires_at  BIGINT,
    created_at  BIGINT  NOT NULL,
    revoked_at  BIGINT,
    PRIMARY KEY (tenant, id)
);

CREATE INDEX api_keys_digest ON api_keys (digest);

-- AUTOINCREMENT: a seq is never reused, even after the newest rows are deleted.
CREATE TABLE changes (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant  TEXT    NOT NULL,
    key_id  TEXT,
    at      BIGINT  NOT NULL
);

CREATE INDEX changes_at ON changes (at);

-- The audit log in batches: a row per tenant and write, its events JSON (tenant-less, each
-- with its place `n` in the batch; an event's id is the batch id * 1024 + n). A row per event
-- would put an insert and an index update beside every request of a busy server.
CREATE TABLE audit_batches (
    id          INTEGER PRIMARY KEY,
    tenant      TEXT    NOT NULL,
    first_at    BIGINT  NOT NULL,
    last_at     BIGINT  NOT NULL,
    count       BIGINT  NOT NULL,
    events      TEXT    NOT NULL
);

CREATE INDEX audit_batches_tenant_id ON audit_batches (tenant, id);
CREATE INDEX audit_batches_last_at ON audit_batches (last_at);
