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

CREATE TABLE audit (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant      TEXT    NOT NULL,
    at          BIGINT  NOT NULL,
    actor       TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    target      TEXT,
    outcome     TEXT    NOT NULL,
    error_code  BIGINT,
    round       BIGINT,
    latency_us  BIGINT
);

CREATE INDEX audit_tenant_id ON audit (tenant, id);
CREATE INDEX audit_at ON audit (at);
