//! The store's behaviour, specified once and run on both backends: every test in the modules
//! below is an `async fn(&Db)`, and `on_both_backends!` runs it twice, as
//! `MODULE::sqlite::NAME` on a fresh SQLite file in a temporary directory and as
//! `MODULE::postgres::NAME` in a fresh PostgreSQL schema (see `harness`).
//!
//! PostgreSQL must answer at `postgres://postgres@127.0.0.1:5432/test` (or at
//! `ROUNDTRIP_TEST_DATABASE_URL`); when it does not, its half of the suite fails, saying so.

/// Runs each `async fn NAME(db: &Db)` named as a test on each backend: `sqlite::NAME` and
/// `postgres::NAME` in the calling module. A test fn left out of the list is dead code, which
/// the lints refuse.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    let db = crate::harness::Db::sqlite().await;
                    super::$name(&db).await;
                    db.finish().await;
                }
            )*
        }

        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    let db = crate::harness::Db::postgres().await;
                    super::$name(&db).await;
                    db.finish().await;
                }
            )*
        }
    };
}

mod harness;

mod audit;
mod changes;
mod key_rings;
mod keys;
mod lifecycle;
mod sqlite;
mod tenants;
