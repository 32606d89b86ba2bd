//! Slabs: the blocks a [`Pool`](crate::Pool) takes from its backing allocator and cuts into
//! slots, kept in a list in the order they are carved.
//!
//! A slab is `[header | debug bitmap | slot 0 | slot 1 | …]`. The bitmap (debug builds only)
//! has one bit per slot, set while the slot is in use: it catches double frees and foreign
//! pointers. The list is `[fully carved …, carving, not carved yet …]`.

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::NonNull;

use allocator_api2::alloc::Allocator;

#[repr(C)]
struct SlabHeader {
    next: Option<NonNull<SlabHeader>>,
    /// Bytes of the block.
    size: usize,
    /// Alignment of the block.
    align: usize,
    /// Slots in the slab.
    slots: usize,
    /// Offset of the first slot from the block's start.
    first: usize,
}

/// Bytes of a slab's metadata before its slots are aligned: the header and, in debug builds,
/// the live bitmap.
fn metadata_size(slots: usize) -> Option<usize> {
    let bitmap = if cfg!(debug_assertions) {
        slots.div_ceil(64).checked_mul(8)?
    } else {
        0
    };
    size_of::<SlabHeader>().checked_add(bitmap)
}

/// A slab, seen through its header pointer (a copyable handle; the list owns the memory).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Slab(NonNull<SlabHeader>);

impl Slab {
    /// The slab whose block starts at `base` (a pointer the pool registered for it).
    #[cfg(debug_assertions)]
    pub(crate) fn from_base(base: NonNull<u8>) -> Slab {
        Slab(base.cast())
    }

    /// The start of the slab's block, with its provenance.
    pub(crate) fn base(self) -> NonNull<u8> {
        self.0.cast()
    }

    /// Bytes of the block.
    pub(crate) fn size(self) -> usize {
        self.header().size
    }
}

impl Slab {
    /// The block layout of a slab of `slots` slots of `slot` bytes aligned to `align`, or `None`
    /// when it overflows.
    pub(crate) fn layout_for(
        slots: usize,
        slot: usize,
        align: usize,
        granule: usize,
    ) -> Option<Layout> {
        let first = metadata_size(slots)?.checked_next_multiple_of(align)?;
        // Aligned to the address map's granule, so no granule is shared by two slabs.
        let align = align.max(align_of::<SlabHeader>()).max(granule);
        let size = slots.checked_mul(slot)?.checked_add(first)?;
        Layout::from_size_align(size, align).ok()
    }

    /// Writes the header (and clears the bitmap) of a fresh block.
    ///
    /// # Safety
    /// `block` is a fresh, writable block of `layout`, which is `layout_for(slots, slot, _)`.
    pub(crate) unsafe fn init(
        block: NonNull<u8>,
        layout: Layout,
        slots: usize,
        slot: usize,
    ) -> Slab {
        let first = layout.size() - slots * slot;
        let header = block.cast::<SlabHeader>();
        // SAFETY: the block is writable, aligned at least for the header, and its metadata area
        // (before `first`) holds the header and the bitmap.
        unsafe {
            header.write(SlabHeader {
                next: None,
                size: layout.size(),
                align: layout.align(),
                slots,
                first,
            });
        }
        let slab = Slab(header);
        #[cfg(debug_assertions)]
        slab.clear_bits();
        slab
    }

    fn header(self) -> SlabHeaderCopy {
        // SAFETY: the header was written by `init` and the list still owns the block; the fields
        // are read by value through the raw pointer.
        unsafe {
            let h = self.0.as_ptr();
            SlabHeaderCopy {
                size: (*h).size,
                align: (*h).align,
                slots: (*h).slots,
                first: (*h).first,
            }
        }
    }

    fn next(self) -> Option<Slab> {
        // SAFETY: as in `header`.
        unsafe { (*self.0.as_ptr()).next.map(Slab) }
    }

    fn set_next(self, next: Option<Slab>) {
        // SAFETY: as in `header`; the pool is `!Sync`, so nothing races this write.
        unsafe { (*self.0.as_ptr()).next = next.map(|s| s.0) }
    }

    /// The first slot, with the provenance of the whole block.
    pub(crate) fn first_slot(self) -> NonNull<u8> {
        // SAFETY: `first` (the metadata size, rounded to the slot alignment) is less than the
        // block's size, since every slab has at least one slot after it.
        unsafe { self.0.cast::<u8>().add(self.header().first) }
    }

    /// One past the last slot.
    pub(crate) fn slots_end(self, slot: usize) -> NonNull<u8> {
        // SAFETY: `first + slots * slot` is the block's size.
        unsafe { self.first_slot().add(self.header().slots * slot) }
    }

    fn block_layout(self) -> Layout {
        let h = self.header();
        // SAFETY: the block was allocated with exactly this size and alignment.
        unsafe { Layout::from_size_align_unchecked(h.size, h.align) }
    }

    /// The index of the slot at `p`, if `p` is the start of a slot of this slab.
    #[cfg(debug_assertions)]
    pub(crate) fn slot_index(self, p: NonNull<u8>, slot: usize) -> Option<usize> {
        let start = self.first_slot().addr().get();
        let offset = p.addr().get().checked_sub(start)?;
        (offset % slot == 0 && offset / slot < self.header().slots).then_some(offset / slot)
    }

    #[cfg(debug_assertions)]
    fn bits(self) -> NonNull<u64> {
        // SAFETY: the bitmap follows the header inside the block's metadata area; the header is
        // 8-aligned and a multiple of 8 long.
        unsafe { self.0.add(1).cast::<u64>() }
    }

    #[cfg(debug_assertions)]
    fn clear_bits(self) {
        let words = self.header().slots.div_ceil(64);
        // SAFETY: the bitmap has `words` words inside the metadata area.
        unsafe { self.bits().write_bytes(0, words) };
    }

    /// Sets or clears the live bit of slot `i`, returning its old value.
    #[cfg(debug_assertions)]
    pub(crate) fn swap_bit(self, i: usize, live: bool) -> bool {
        // SAFETY: `i < slots`, and the bitmap has a bit per slot.
        unsafe { super::swap_live_bit(self.bits(), i, live) }
    }
}

struct SlabHeaderCopy {
    size: usize,
    align: usize,
    slots: usize,
    first: usize,
}

/// A slab's address range and its position in the list, for looking slots up in `trim`.
pub(crate) struct SlabRange {
    start: usize,
    end: usize,
    pub(crate) index: usize,
}

/// The pool's slabs, oldest first, with the one being carved.
pub(crate) struct SlabList {
    first: Cell<Option<Slab>>,
    last: Cell<Option<Slab>>,
    carving: Cell<Option<Slab>>,
    len: Cell<usize>,
    slots: Cell<usize>,
    bytes: Cell<usize>,
}

impl SlabList {
    pub(crate) const fn new() -> SlabList {
        SlabList {
            first: Cell::new(None),
            last: Cell::new(None),
            carving: Cell::new(None),
            len: Cell::new(0),
            slots: Cell::new(0),
            bytes: Cell::new(0),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len.get()
    }

    pub(crate) fn slot_count(&self) -> usize {
        self.slots.get()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes.get()
    }

    /// The slab being carved.
    pub(crate) fn carving(&self) -> Option<Slab> {
        self.carving.get()
    }

    /// Appends a new slab (not carved yet).
    pub(crate) fn push(&self, slab: Slab) {
        match self.last.get() {
            Some(last) => last.set_next(Some(slab)),
            None => self.first.set(Some(slab)),
        }
        self.last.set(Some(slab));
        self.len.set(self.len.get() + 1);
        self.slots.set(self.slots.get() + slab.header().slots);
        self.bytes.set(self.bytes.get() + slab.header().size);
    }

    /// Moves carving on to the next slab; `false` when there is none.
    pub(crate) fn advance(&self) -> bool {
        let next = match self.carving.get() {
            Some(s) => s.next(),
            None => self.first.get(),
        };
        if next.is_some() {
            self.carving.set(next);
        }
        next.is_some()
    }

    /// Every slot becomes free: carving starts again at the first slab.
    pub(crate) fn restart(&self) {
        self.uncarve_all();
        self.advance();
    }

    /// Every slot becomes free and no slab is carved: the first carved is the first slab, when
    /// [`advance`](Self::advance) is next called. The caller forgets every slot (no slot is in
    /// use, the free list is emptied).
    pub(crate) fn uncarve_all(&self) {
        self.carving.set(None);
        #[cfg(debug_assertions)]
        {
            let mut s = self.first.get();
            while let Some(slab) = s {
                slab.clear_bits();
                s = slab.next();
            }
        }
    }

    /// Slots carved from each slab, in list order: all of them before the carving slab, those
    /// before `carve` in it, none after it.
    pub(crate) fn carved_counts(
        &self,
        carve: NonNull<u8>,
        slot: usize,
    ) -> impl Iterator<Item = usize> + '_ {
        // With no slab being carved, none is carved yet.
        let mut past_carving = self.carving.get().is_none();
        let mut s = self.first.get();
        core::iter::from_fn(move || {
            let slab = s?;
            s = slab.next();
            Some(if past_carving {
                0
            } else if Some(slab) == self.carving.get() {
                past_carving = true;
                (carve.addr().get() - slab.first_slot().addr().get()) / slot
            } else {
                slab.header().slots
            })
        })
    }

    /// The slabs' address ranges, sorted by address.
    pub(crate) fn sorted_ranges(&self, slot: usize) -> alloc::vec::Vec<SlabRange> {
        let mut ranges = alloc::vec::Vec::with_capacity(self.len());
        let mut s = self.first.get();
        while let Some(slab) = s {
            ranges.push(SlabRange {
                start: slab.first_slot().addr().get(),
                end: slab.slots_end(slot).addr().get(),
                index: ranges.len(),
            });
            s = slab.next();
        }
        ranges.sort_unstable_by_key(|r| r.start);
        ranges
    }

    /// The range holding `p`.
    pub(crate) fn find(ranges: &[SlabRange], p: NonNull<u8>) -> Option<&SlabRange> {
        let a = p.addr().get();
        let i = ranges.partition_point(|r| r.start <= a).checked_sub(1)?;
        let r = &ranges[i];
        (a < r.end).then_some(r)
    }

    /// Moves the slabs for which `keep(index)` is false (`index` in list order; `keep` is called
    /// once per slab, in that order) behind all the others, as slabs not carved yet, for
    /// [`release_uncarved`](Self::release_uncarved). When one of them is the slab being carved,
    /// carving moves back to the last kept slab before it (fully carved, as every slab before the
    /// carving one is), or to none, and this returns `true`: the caller must empty its carve
    /// region. No slab is released and no count changes.
    ///
    /// # Safety
    /// No slot of a slab that is not kept is in use or on a free list: slabs behind the carving
    /// one are taken as never carved. `keep` does not unwind (the links are rewritten as the
    /// list is walked).
    pub(crate) unsafe fn sink(&self, mut keep: impl FnMut(usize) -> bool) -> bool {
        // The kept slabs and the others, each as a chain (first, last), in list order.
        let mut kept: Option<(Slab, Slab)> = None;
        let mut sunk: Option<(Slab, Slab)> = None;
        let carving = self.carving.get();
        let mut carving_sunk = false;
        let mut s = self.first.get();
        let mut index = 0;
        while let Some(slab) = s {
            // Read before the link is rewritten below.
            s = slab.next();
            let chain = if keep(index) {
                &mut kept
            } else {
                if Some(slab) == carving {
                    carving_sunk = true;
                    self.carving.set(kept.map(|(_, last)| last));
                }
                &mut sunk
            };
            *chain = Some(match *chain {
                Some((first, last)) => {
                    last.set_next(Some(slab));
                    (first, slab)
                }
                None => (slab, slab),
            });
            index += 1;
        }
        if let Some((_, last)) = sunk {
            last.set_next(None);
        }
        match kept {
            Some((first, last)) => {
                last.set_next(sunk.map(|(first, _)| first));
                self.first.set(Some(first));
                self.last.set(Some(sunk.map_or(last, |(_, last)| last)));
            }
            None => {
                self.first.set(sunk.map(|(first, _)| first));
                self.last.set(sunk.map(|(_, last)| last));
            }
        }
        carving_sunk
    }

    /// Releases every slab behind the one being carved (every slab when none is), one at a
    /// time: each leaves the list, goes to `forget` and out of the counts before its block goes
    /// to `alloc`. So an `alloc.deallocate` that unwinds leaves a consistent list that no
    /// longer holds the block it was given, and holds the slabs not released yet.
    ///
    /// # Safety
    /// No slot of a slab behind the carving one (of any slab when none is) is in use or on a
    /// free list (as for slabs not carved yet); `alloc` is the allocator the slabs came from.
    pub(crate) unsafe fn release_uncarved<A: Allocator>(
        &self,
        mut forget: impl FnMut(Slab),
        alloc: &A,
    ) {
        let before = self.carving.get();
        loop {
            let next = match before {
                Some(c) => c.next(),
                None => self.first.get(),
            };
            let Some(slab) = next else { break };
            let after = slab.next();
            match before {
                Some(c) => c.set_next(after),
                None => self.first.set(after),
            }
            if after.is_none() {
                self.last.set(before);
            }
            forget(slab);
            let h = slab.header();
            self.len.set(self.len.get() - 1);
            self.slots.set(self.slots.get() - h.slots);
            self.bytes.set(self.bytes.get() - h.size);
            let layout = slab.block_layout();
            // SAFETY: the block came from `alloc` with this layout; nothing refers to it any
            // more: it left the list above, and none of its slots is in use or on a free list
            // (both forwarded from the caller).
            unsafe { alloc.deallocate(slab.base(), layout) };
        }
    }

    /// Releases every slab (see [`release_uncarved`](Self::release_uncarved)), for a pool that
    /// is dropped.
    ///
    /// # Safety
    /// No slot is in use or used again; `alloc` is the allocator the slabs came from.
    pub(crate) unsafe fn release_all<A: Allocator>(&self, alloc: &A) {
        self.carving.set(None);
        // SAFETY: forwarded from the caller: no slot is in use or used again (the free list is
        // not read again), and the slabs came from `alloc`.
        unsafe { self.release_uncarved(|_| {}, alloc) };
    }
}
