//! The master key that `serve` and `stdio` wrap requestState keys under before the tenant
//! store keeps them: `ROUNDTRIP_MASTER_KEY` when it is set, else a key generated on first
//! start into `{data_dir}/master.key` (mode 0600) and read back at every later start.
//!
//! What the generated file protects, honestly: a copy of the database without the data dir
//! (a dump, a backup, a PostgreSQL replica) gives no state key away. It does not protect a
//! stolen disk that holds both. Production sets `ROUNDTRIP_MASTER_KEY` from a secret store,
//! and every process of a fleet must have the same one.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use roundtrip_runtime::sealing::MasterKey;

use crate::config::Config;

/// The configured master key, or the one in the key file, made if there is none.
pub fn resolve(config: &Config) -> anyhow::Result<MasterKey> {
    if let Some(key) = config.configured_master_key()? {
        return Ok(key);
    }
    let path = config.master_key_file();
    let key = match read(&path)? {
        Some(key) => key,
        None => create(&path)?,
    };
    if config.database_url.is_some() {
        tracing::warn!(
            file = %path.display(),
            "ROUNDTRIP_MASTER_KEY is unset: using the master key in the data dir; every \
             process on this database needs the same key, so set ROUNDTRIP_MASTER_KEY"
        );
    }
    Ok(key)
}

/// The key in `path`, if the file exists.
fn read(path: &Path) -> anyhow::Result<Option<MasterKey>> {
    match std::fs::read_to_string(path) {
        Ok(text) => MasterKey::from_base64(&text).map(Some).with_context(|| {
            format!(
                "the master key file {} does not hold a master key \
                 (restore it, or set ROUNDTRIP_MASTER_KEY)",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading the master key file {}", path.display())),
    }
}

/// Generates a key into `path`, readable by this user only. Written whole to a file of its
/// own first, then linked into place, so a process starting at the same moment reads either
/// no file or the whole key; if that process won, its key is the one used.
fn create(path: &Path) -> anyhow::Result<MasterKey> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the data dir {}", dir.display()))?;
    let key = MasterKey::generate();
    let partial = partial_path(path);
    write_private(&partial, key.to_base64().as_bytes())
        .with_context(|| format!("writing the master key file {}", partial.display()))?;
    let linked = std::fs::hard_link(&partial, path);
    let _ = std::fs::remove_file(&partial);
    match linked {
        Ok(()) => {
            tracing::info!(
                file = %path.display(),
                "generated the master key that wraps requestState keys at rest; \
                 set ROUNDTRIP_MASTER_KEY in production"
            );
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read(path)?.with_context(|| format!("the master key file {} vanished", path.display()))
        }
        Err(e) => {
            Err(e).with_context(|| format!("creating the master key file {}", path.display()))
        }
    }
}

/// A name next to `path` that no other process picks.
fn partial_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{}.partial", std::process::id()));
    PathBuf::from(name)
}

/// Writes `bytes` and a newline to a new file at `path`, mode 0600 on Unix, synced.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.write_all(b"\n")?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_in(dir: &Path) -> Config {
        Config {
            data_dir: dir.join("data").display().to_string(),
            ..Config::default()
        }
    }

    #[test]
    fn without_a_configured_key_one_is_generated_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let config = config_in(dir.path());
        let first = resolve(&config).unwrap();
        let again = resolve(&config).unwrap();
        assert_eq!(*first.to_base64(), *again.to_base64());
        let stored = std::fs::read_to_string(config.master_key_file()).unwrap();
        assert_eq!(stored.trim(), first.to_base64().as_str());
    }

    #[cfg(unix)]
    #[test]
    fn the_generated_key_file_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let config = config_in(dir.path());
        resolve(&config).unwrap();
        let mode = std::fs::metadata(config.master_key_file())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_configured_key_wins_and_no_file_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let key = MasterKey::generate();
        let config = Config {
            master_key: Some(key.to_base64().to_string()),
            ..config_in(dir.path())
        };
        assert_eq!(*resolve(&config).unwrap().to_base64(), *key.to_base64());
        assert!(!config.master_key_file().exists());
    }

    #[test]
    fn a_key_file_that_holds_no_key_is_an_error_naming_the_file_not_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let config = config_in(dir.path());
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        std::fs::write(config.master_key_file(), "garbage-text\n").unwrap();
        let message = format!("{:#}", resolve(&config).unwrap_err());
        assert!(message.contains("master.key"), "{message}");
        assert!(message.contains("ROUNDTRIP_MASTER_KEY"), "{message}");
        assert!(!message.contains("garbage-text"), "{message}");
    }
}
