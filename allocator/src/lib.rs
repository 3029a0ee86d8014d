//! The `roundtrip` binary's global allocator: mimalloc (v3), called the way its own `malloc`
//! is fastest.
//!
//! The `mimalloc` crate's allocator passes every request to `mi_malloc_aligned`, with the
//! layout's alignment. In mimalloc v3 that path takes a plain block only when the size class
//! is a power of two or a free block happens to be aligned; any other request (a 48-byte one
//! when its page has no free block, everything over 1 KiB) is over-allocated by the alignment
//! and handed out shifted, through `mi_theap_malloc_zero_aligned_at_generic` and
//! `…_overalloc`. An echo `tools/call` made about seven such requests, which cost about 1.7 k
//! instructions of its 59.8 k (BENCHMARKS.md, "2026-12-05 (late night)").
//!
//! Yet every mimalloc block is already aligned to 8 bytes, and to 16 when its size class is a
//! multiple of 16: on a 64-bit target the classes are 8 bytes and then multiples of 16
//! (`MI_ALIGN2W`), and a page's first block is 16-aligned (`MI_PAGE_MIN_START_BLOCK_ALIGN`). So
//! a request whose alignment is at most 16 and divides its size is served by `mi_malloc`
//! (`mi_zalloc`, `mi_realloc`) as it is; only larger or odd alignments go to the `_aligned`
//! functions. `mi_free` frees both kinds. (The rule is a little stricter than mimalloc needs:
//! a 24-byte request with alignment 16 gets a 32-byte block, 16-aligned, but goes the aligned
//! way. Rust's own types never ask that: their sizes are multiples of their alignments.)
//!
//! This is the workspace's one crate with `unsafe` code: `GlobalAlloc` is an unsafe trait, and
//! its methods call C. The lint is allowed on the `impl` and the tests alone.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The largest alignment every mimalloc block of a fitting size has (`MI_MAX_ALIGN_SIZE`).
const NATURAL_ALIGN: usize = 16;

/// mimalloc as the global allocator. Use it in a binary:
///
/// ```no_run
/// #[global_allocator]
/// static ALLOCATOR: roundtrip_allocator::Mimalloc = roundtrip_allocator::Mimalloc;
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct Mimalloc;

/// Whether a plain block of `size` bytes is aligned to `align`. (`GlobalAlloc` is never asked
/// for zero bytes, the one size for which this would not hold: `mi_malloc(0)` gives 8.)
fn natural(size: usize, align: usize) -> bool {
    align <= NATURAL_ALIGN && size.is_multiple_of(align)
}

// SAFETY: every function returns either null or a block of mimalloc's of at least the size
// asked for, aligned as the layout asks (by `natural`, or by the `_aligned` function), and
// `dealloc` and `realloc` receive only such blocks, which mimalloc's `mi_free` and
// `mi_realloc*` take whichever function made them.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: plain C calls; any size and power-of-two alignment is accepted.
        unsafe {
            if natural(layout.size(), layout.align()) {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe {
            if natural(layout.size(), layout.align()) {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (the caller's contract).
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout` (the caller's contract); the
        // new block keeps the alignment, naturally or by the `_aligned` function.
        unsafe {
            if natural(new_size, layout.align()) {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    /// Every size up to 4 KiB and past it, at every alignment up to 4 KiB.
    fn layouts() -> impl Iterator<Item = Layout> {
        let sizes = (1..=512)
            .chain((520..=4096).step_by(40))
            .chain([8191, 65_536, 1 << 20]);
        sizes.flat_map(|size| {
            (0..=12).filter_map(move |shift| Layout::from_size_align(size, 1 << shift).ok())
        })
    }

    fn is_aligned(ptr: *mut u8, align: usize) -> bool {
        (ptr as usize).is_multiple_of(align)
    }

    #[test]
    fn every_block_is_aligned_as_its_layout_asks() {
        // Many blocks of each layout at once, so that pages fill and fresh ones are taken.
        for layout in layouts() {
            let blocks: Vec<*mut u8> = (0..8)
                // SAFETY: the layouts have non-zero sizes.
                .map(|_| unsafe { Mimalloc.alloc(layout) })
                .collect();
            for &ptr in &blocks {
                assert!(!ptr.is_null(), "{layout:?}");
                assert!(is_aligned(ptr, layout.align()), "{layout:?} at {ptr:p}");
            }
            for ptr in blocks {
                // SAFETY: allocated just above with this layout.
                unsafe { Mimalloc.dealloc(ptr, layout) };
            }
        }
    }

    #[test]
    fn zeroed_blocks_are_zero_and_aligned() {
        for layout in layouts().filter(|l| l.size() <= 4096) {
            // SAFETY: non-zero sizes; each block is written and read within its size, then freed.
            unsafe {
                // A block filled and freed first, so that the zeroed one, likely the same
                // block again, has something to clear.
                let dirty = Mimalloc.alloc(layout);
                assert!(!dirty.is_null(), "{layout:?}");
                dirty.write_bytes(0xa5, layout.size());
                Mimalloc.dealloc(dirty, layout);
                let ptr = Mimalloc.alloc_zeroed(layout);
                assert!(!ptr.is_null(), "{layout:?}");
                assert!(is_aligned(ptr, layout.align()), "{layout:?}");
                assert!(std::slice::from_raw_parts(ptr, layout.size())
                    .iter()
                    .all(|&b| b == 0));
                Mimalloc.dealloc(ptr, layout);
            }
        }
    }

    #[test]
    fn a_reallocated_block_keeps_its_bytes_and_its_alignment() {
        for layout in layouts().filter(|l| l.size() <= 4096) {
            for new_size in [1, layout.size() / 2 + 1, layout.size() * 3] {
                // SAFETY: the block is written and read within its sizes, then freed.
                unsafe {
                    let ptr = Mimalloc.alloc(layout);
                    assert!(!ptr.is_null(), "{layout:?}");
                    for i in 0..layout.size() {
                        ptr.add(i).write(i as u8);
                    }
                    let moved = Mimalloc.realloc(ptr, layout, new_size);
                    assert!(!moved.is_null(), "{layout:?} to {new_size}");
                    assert!(
                        is_aligned(moved, layout.align()),
                        "{layout:?} to {new_size}"
                    );
                    for i in 0..layout.size().min(new_size) {
                        assert_eq!(moved.add(i).read(), i as u8, "{layout:?} to {new_size}");
                    }
                    let new_layout =
                        Layout::from_size_align(new_size, layout.align()).expect("a valid layout");
                    Mimalloc.dealloc(moved, new_layout);
                }
            }
        }
    }

    #[test]
    fn only_alignments_a_plain_block_has_take_the_plain_path() {
        assert!(natural(48, 8));
        assert!(natural(48, 16));
        assert!(natural(1, 1));
        assert!(!natural(24, 16), "a size the alignment does not divide");
        assert!(!natural(64, 32));
        assert!(!natural(4096, 4096));
    }
}
