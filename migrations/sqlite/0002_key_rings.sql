-- Each tenant's requestState key ring, kept by the KeyManager's store share
-- (roundtrip_tenants::StoreKeyShare): a JSON `WrappedRing`, every key wrapped under the
-- master key (never a key in the clear). `version` grows by one at every write, and writers
-- compare-and-swap on it. No foreign key: a ring may be made for a tenant before the
-- follower sees it, and a deleted tenant's ring opens nothing without its tenant.
CREATE TABLE key_rings (
    tenant      TEXT    NOT NULL PRIMARY KEY,
    ring        TEXT    NOT NULL,
    version     BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL
);
