//! Peak memory of one call, measured as the benchmark suite and the
//! efficient-attention chapter measure it: by Linux's accounting of the
//! process's resident pages (`/proc/self/status`), so that the two cannot
//! disagree on method.

use anyhow::Context;

/// A `kB` field of a `/proc` file (such as `VmRSS:` of
/// `/proc/self/status`), in bytes.
fn proc_bytes(file: &str, field: &str) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading {file}"))?;
    let line = text.lines().find(|l| l.starts_with(field));
    let kb = line.and_then(|l| l.split_whitespace().nth(1));
    let kb: u64 = kb
        .with_context(|| format!("no {field} in {file}"))?
        .parse()?;
    Ok(kb * 1024)
}

/// The bytes of memory `f` newly touched at its peak: this process's
/// high-water mark of resident memory (VmHWM) after `f`, minus its
/// resident memory (VmRSS) before it, the mark reset first
/// (`/proc/self/clear_refs`), as `bench_pytorch.py --memory` counts
/// PyTorch's.
///
/// Linux only. The count is in whole pages (4 KiB); it includes whatever
/// else this process touches meanwhile (run it with nothing else going
/// on), and misses memory that the allocator kept from earlier frees and
/// hands to `f` again (small blocks; large ones are mapped afresh): the
/// suite measures each item in a fresh process for that reason.
///
/// # Errors
/// When `/proc/self` cannot be read or written (another system, or a
/// sandbox that hides it).
///
/// # Examples
/// ```
/// use d2l_attention::memory::peak_bytes;
///
/// let bytes = peak_bytes(|| {
///     let buffer = vec![1u8; 64 << 20]; // 64 MiB, every page written
///     std::hint::black_box(&buffer);
/// })?;
/// // the buffer, give or take what the process maps or frees meanwhile
/// assert!(bytes > 60 << 20 && bytes < 72 << 20, "{bytes}");
/// # anyhow::Ok(())
/// ```
pub fn peak_bytes(f: impl FnOnce()) -> anyhow::Result<u64> {
    std::fs::write("/proc/self/clear_refs", "5")
        .context("resetting the peak memory (/proc/self/clear_refs)")?;
    let before = proc_bytes("/proc/self/status", "VmRSS:")?;
    f();
    Ok(proc_bytes("/proc/self/status", "VmHWM:")?.saturating_sub(before))
}

/// The machine's memory (`MemTotal` of `/proc/meminfo`), in bytes.
///
/// # Errors
/// When `/proc/meminfo` cannot be read.
///
/// # Examples
/// ```
/// let bytes = d2l_attention::memory::total_memory()?;
/// assert!(bytes > 1 << 20);
/// # anyhow::Ok(())
/// ```
pub fn total_memory() -> anyhow::Result<u64> {
    proc_bytes("/proc/meminfo", "MemTotal:")
}
