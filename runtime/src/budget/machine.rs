//! The memory this machine gives the process, to check the process ceiling against at
//! start-up: the smaller of `MemTotal` (`/proc/meminfo`) and the cgroup v2 limit
//! (`/sys/fs/cgroup/memory.max`) when there is one.

use std::path::Path;

/// The share of the machine's memory the process ceiling may take: the rest is for what no
/// budget counts (allocator slack, buffers, the store's connections).
pub const CEILING_SHARE: (u64, u64) = (3, 4);

/// The process ceiling is above [`CEILING_SHARE`] of the memory the machine gives it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the process memory budget ({ceiling} bytes) is above 3/4 of the {available} bytes \
     {source_name} allows: lower it, or give the process more memory"
)]
pub struct CeilingTooHigh {
    /// The configured ceiling.
    pub ceiling: u64,
    /// The memory found.
    pub available: u64,
    /// Where it was found.
    pub source_name: &'static str,
}

/// The memory the process may use, and where that was read: `None` when neither file can be
/// read (not Linux): nothing to check against.
pub fn available_memory() -> Option<(u64, &'static str)> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| mem_total(&s))
        .map(|b| (b, "MemTotal in /proc/meminfo"));
    let cgroup = cgroup_limit(Path::new("/sys/fs/cgroup/memory.max"))
        .map(|b| (b, "the cgroup's memory.max"));
    match (total, cgroup) {
        (Some(t), Some(c)) => Some(if c.0 < t.0 { c } else { t }),
        (t, c) => t.or(c),
    }
}

/// Refuses a `ceiling` above 3/4 of `available` memory.
pub fn check_ceiling(
    ceiling: u64,
    available: Option<(u64, &'static str)>,
) -> Result<(), CeilingTooHigh> {
    let Some((available, source_name)) = available else {
        return Ok(());
    };
    let (num, den) = CEILING_SHARE;
    if ceiling > available / den * num {
        return Err(CeilingTooHigh {
            ceiling,
            available,
            source_name,
        });
    }
    Ok(())
}

/// `MemTotal:  24683520 kB` in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// The cgroup v2 limit in bytes; `None` for `max` (no limit) or no such file.
fn cgroup_limit(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_is_read_in_bytes() {
        let meminfo = "MemTotal:       2048 kB\nMemFree:        1 kB\n";
        assert_eq!(mem_total(meminfo), Some(2048 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB"), None);
    }

    #[test]
    fn a_ceiling_above_three_quarters_of_memory_is_refused() {
        let machine = Some((4_000, "test"));
        assert_eq!(check_ceiling(3_000, machine), Ok(()));
        let e = check_ceiling(3_001, machine).expect_err("above 3/4");
        assert_eq!(e.available, 4_000);
        assert_eq!(check_ceiling(u64::MAX, None), Ok(()));
    }
}
