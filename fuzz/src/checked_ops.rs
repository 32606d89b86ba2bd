//! The `Allocator` operations (`allocate`, `grow`, `shrink`, `deallocate` and the zeroed forms)
//! through the allocator under test, each checked against the [`Model`] and recorded in it.

use arena_pool::allocator_api2::alloc::{Allocator, Layout};

use crate::{Block, Model, assert_zero};

/// `allocate` (or `allocate_zeroed`) of `layout` through `a`; on success the block enters the
/// model (zeroed memory is checked first) and its index is returned.
pub fn alloc_op<A: Allocator + ?Sized>(
    a: &A,
    m: &mut Model,
    layout: Layout,
    zeroed: bool,
    tag: u8,
) -> Option<usize> {
    let r = if zeroed {
        a.allocate_zeroed(layout)
    } else {
        a.allocate(layout)
    };
    let block = r.ok()?;
    let (p, len) = (block.cast::<u8>(), block.len());
    if zeroed {
        // SAFETY: a zeroed block of `len` bytes.
        unsafe { assert_zero(p, 0, len, "allocate_zeroed") };
    }
    Some(m.insert(p, len, layout, tag))
}

/// `grow` (or `grow_zeroed`) of block `i`, described with `old_size` (a fitting size), to `new`
/// through `a`. Checks the block before; on success checks that its first `old_size` bytes
/// moved with it and, for `grow_zeroed`, that the new bytes are zero (the bytes between the
/// new size and the old length may instead keep their old value), then replaces it in the
/// model. On failure checks that it is intact. Returns the new index, or `None` on failure.
pub fn grow_op<A: Allocator + ?Sized>(
    a: &A,
    m: &mut Model,
    i: usize,
    old_size: usize,
    new: Layout,
    zeroed: bool,
    tag: u8,
) -> Option<usize> {
    let b = m.blocks()[i];
    b.verify(b.len);
    assert!(new.size() >= old_size);
    // SAFETY: `b` is live in `a` and `old_size` fits it; the new size is not smaller.
    let r = unsafe {
        if zeroed {
            a.grow_zeroed(b.ptr, b.layout(old_size), new)
        } else {
            a.grow(b.ptr, b.layout(old_size), new)
        }
    };
    let Ok(q) = r else {
        b.verify(b.len);
        return None;
    };
    let (p, len) = (q.cast::<u8>(), q.len());
    assert!(len >= new.size(), "grow: length {len} < {}", new.size());
    // SAFETY: the new block holds `len` bytes: the first `old_size` were preserved, the rest
    // were either preserved or zeroed (`grow_zeroed`) or are the old block's, all initialised
    // but for plain `grow`, whose tail is not read.
    unsafe {
        let kept = std::slice::from_raw_parts(p.as_ptr(), old_size);
        if let Some(k) = kept.iter().position(|&x| x != b.pat) {
            panic!(
                "grow: byte {k} of {p:p} lost (was {:#x} at {:p})",
                b.pat, b.ptr
            );
        }
        if zeroed {
            let tail = std::slice::from_raw_parts(p.as_ptr().add(old_size), len - old_size);
            for (k, &x) in tail.iter().enumerate() {
                let at = old_size + k;
                let may_keep = at >= new.size() && at < b.len;
                assert!(
                    x == 0 || (may_keep && x == b.pat),
                    "grow_zeroed: byte {at} of {p:p} is {x:#x} (old size {old_size}, old len {}, new size {}, len {len})",
                    b.len,
                    new.size()
                );
            }
        }
    }
    m.remove(i);
    Some(m.insert(p, len, new, tag))
}

/// `shrink` of block `i`, described with `old_size`, to `new` through `a`: like
/// [`grow_op`], keeping the first `new.size()` bytes.
pub fn shrink_op<A: Allocator + ?Sized>(
    a: &A,
    m: &mut Model,
    i: usize,
    old_size: usize,
    new: Layout,
    tag: u8,
) -> Option<usize> {
    let b = m.blocks()[i];
    b.verify(b.len);
    assert!(new.size() <= old_size);
    // SAFETY: `b` is live in `a` and `old_size` fits it; the new size is not larger.
    let r = unsafe { a.shrink(b.ptr, b.layout(old_size), new) };
    let Ok(q) = r else {
        b.verify(b.len);
        return None;
    };
    let (p, len) = (q.cast::<u8>(), q.len());
    assert!(len >= new.size(), "shrink: length {len} < {}", new.size());
    // SAFETY: the first `new.size()` bytes were preserved from the old block.
    let kept = unsafe { std::slice::from_raw_parts(p.as_ptr(), new.size()) };
    if let Some(k) = kept.iter().position(|&x| x != b.pat) {
        panic!(
            "shrink: byte {k} of {p:p} lost (was {:#x} at {:p})",
            b.pat, b.ptr
        );
    }
    m.remove(i);
    Some(m.insert(p, len, new, tag))
}

/// `deallocate` of block `i`, described with `size`, through `a`, after checking its bytes.
pub fn dealloc_op<A: Allocator + ?Sized>(a: &A, m: &mut Model, i: usize, size: usize) -> Block {
    let b = m.blocks()[i];
    b.verify(b.len);
    m.remove(i);
    // SAFETY: `b` is live in `a` and `size` fits it; it leaves the model, so it is not used
    // again.
    unsafe { a.deallocate(b.ptr, b.layout(size)) };
    b
}
