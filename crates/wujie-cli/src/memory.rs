//! How the allocator gives memory back. Events may be 8 MiB each, and a run passes hundreds of
//! them through buffers of a few MiB (read, parsed, stored, sent). glibc's malloc serves a
//! buffer that large with its own mapping, unmapped when freed, until the first such buffer
//! is freed: from then on it raises that threshold to the freed size (up to 32 MiB) and
//! serves them from its heaps, where the holes they leave stay resident. Measured with
//! `scripts/bench/run-memory` (300 events of 1 MiB, the embedded default, debug build), the
//! peak of `wujie run` was 188 MB with the moving threshold and 109–117 MB with it fixed.

/// Keeps every allocation of 128 KiB or more (glibc's default threshold) in a mapping of its
/// own, returned to the system when freed, instead of letting the threshold move.
pub fn return_big_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const THRESHOLD: nix::libc::c_int = 128 * 1024;
        // SAFETY: mallopt only sets a tunable of the allocator; called before any thread
        // starts.
        #[allow(unsafe_code)]
        unsafe {
            nix::libc::mallopt(nix::libc::M_MMAP_THRESHOLD, THRESHOLD);
        }
    }
}
