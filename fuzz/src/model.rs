//! The block model: [`Block`], a live block with its byte pattern, and [`Model`], the live
//! blocks, each filled with its own pattern, none overlapping another.

use std::collections::BTreeMap;
use std::ptr::NonNull;

use arena_pool::allocator_api2::alloc::Layout;

/// A live block in the model.
#[derive(Clone, Copy, Debug)]
pub struct Block {
    /// Where it starts.
    pub ptr: NonNull<u8>,
    /// The size it was requested with.
    pub size: usize,
    /// The length the allocator reported (at least `size`).
    pub len: usize,
    /// The alignment it was requested with.
    pub align: usize,
    /// The byte its `len` bytes hold.
    pub pat: u8,
    /// When it was (re)allocated: a strictly increasing number.
    pub seq: u64,
    /// When it was made: its `seq`, unless the target says a resize kept it in its place (a
    /// large block of an arena), or it was made before it entered the model (`into_slice`).
    /// A scope's exit frees the blocks made since it began.
    pub born: u64,
    /// When it was made or last resized through the `Allocator` methods: its `seq` unless it was
    /// made before it entered the model. A restored checkpoint frees the blocks touched since it
    /// was taken.
    pub touched: u64,
    /// What the target wants to remember about it (e.g. which path served it).
    pub tag: u8,
    /// Placed through the typed API (`BumpAlloc`): never resized or freed on its own, only with
    /// everything else (reset, scope exit, restore).
    pub typed: bool,
}

impl Block {
    /// A size the block may be described with: between its requested size and its length.
    pub fn fit(&self, sel: u8) -> usize {
        self.size + sel as usize % (self.len - self.size + 1)
    }

    /// The layout of the block described with `size` (from [`fit`](Block::fit)).
    pub fn layout(&self, size: usize) -> Layout {
        Layout::from_size_align(size, self.align).expect("a block's fitting size is valid")
    }

    /// The bytes `[from, to)` of the block.
    ///
    /// # Safety
    /// The block is live and `to <= len`, and its bytes are initialised.
    unsafe fn bytes(&self, from: usize, to: usize) -> &[u8] {
        // SAFETY: forwarded from the caller.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(from), to - from) }
    }

    /// Checks that the bytes `[0, upto)` still hold the pattern.
    pub fn verify(&self, upto: usize) {
        assert!(upto <= self.len);
        // SAFETY: the model's blocks are live and fully written with their pattern.
        let bytes = unsafe { self.bytes(0, upto) };
        if let Some(i) = bytes.iter().position(|&b| b != self.pat) {
            panic!(
                "block {:p} (size {}, len {}, seq {}) corrupted at byte {i}: {:#x} instead of {:#x}",
                self.ptr, self.size, self.len, self.seq, bytes[i], self.pat
            );
        }
    }
}

/// Checks that the bytes `[from, to)` at `p` are zero.
///
/// # Safety
/// `p` is valid for reads of `to` initialised bytes.
pub unsafe fn assert_zero(p: NonNull<u8>, from: usize, to: usize, what: &str) {
    // SAFETY: forwarded from the caller.
    let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr().add(from), to - from) };
    if let Some(i) = bytes.iter().position(|&b| b != 0) {
        panic!(
            "{what}: byte {} of {p:p} is {:#x}, not zero",
            from + i,
            bytes[i]
        );
    }
}

/// The live blocks: each filled with its own pattern, none overlapping another.
#[derive(Default)]
pub struct Model {
    blocks: Vec<Block>,
    /// Start -> end of every block with a non-zero length.
    spans: BTreeMap<usize, usize>,
    seq: u64,
}

impl Model {
    /// No block.
    pub fn new() -> Model {
        Model::default()
    }

    /// Live blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether no block is live.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The live blocks.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The index of a live block chosen by `sel`, if there is one.
    pub fn pick(&self, sel: u16) -> Option<usize> {
        (!self.blocks.is_empty()).then(|| sel as usize % self.blocks.len())
    }

    /// The sequence number the next block will get.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    /// Records a fresh block the allocator returned for `layout` with length `len`: checks
    /// its alignment, length and that it overlaps no live block, then fills it with a new
    /// pattern. Returns its index.
    pub fn insert(&mut self, ptr: NonNull<u8>, len: usize, layout: Layout, tag: u8) -> usize {
        let (size, align) = (layout.size(), layout.align());
        let addr = ptr.addr().get();
        assert!(
            addr.is_multiple_of(align),
            "{ptr:p} is not aligned to {align}"
        );
        assert!(len >= size, "{ptr:p}: length {len} < requested {size}");
        if len > 0 {
            let end = addr
                .checked_add(len)
                .expect("a block wraps the address space");
            if let Some((&s, &e)) = self.spans.range(..end).next_back() {
                assert!(
                    e <= addr,
                    "new block [{addr:#x}, {end:#x}) overlaps live block [{s:#x}, {e:#x})"
                );
            }
            self.spans.insert(addr, end);
        }
        let seq = self.seq;
        self.seq += 1;
        let pat = ((seq % 126) as u8 + 1) * 2;
        // SAFETY: the allocator handed out `len` writable bytes at `ptr`.
        unsafe { ptr.as_ptr().write_bytes(pat, len) };
        self.blocks.push(Block {
            ptr,
            size,
            len,
            align,
            pat,
            seq,
            born: seq,
            touched: seq,
            tag,
            typed: false,
        });
        self.blocks.len() - 1
    }

    /// [`insert`](Model::insert) of a block placed through the typed API (see [`Block::typed`]).
    pub fn insert_typed(&mut self, ptr: NonNull<u8>, len: usize, layout: Layout, tag: u8) -> usize {
        let i = self.insert(ptr, len, layout, tag);
        self.blocks[i].typed = true;
        i
    }

    /// Takes a sequence number for a block made now that enters the model later (see
    /// [`set_stamps`](Model::set_stamps)).
    pub fn take_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq - 1
    }

    /// Sets when block `i` was made and last touched (see [`Block::born`], [`Block::touched`]).
    pub fn set_stamps(&mut self, i: usize, born: u64, touched: u64) {
        let b = &mut self.blocks[i];
        assert!(born <= touched && touched <= b.seq);
        b.born = born;
        b.touched = touched;
    }

    /// Sets the tag of block `i`.
    pub fn set_tag(&mut self, i: usize, tag: u8) {
        self.blocks[i].tag = tag;
    }

    /// The index of a live block that was not placed through the typed API, chosen by `sel`.
    pub fn pick_untyped(&self, sel: u16) -> Option<usize> {
        let n = self.blocks.iter().filter(|b| !b.typed).count();
        if n == 0 {
            return None;
        }
        let k = sel as usize % n;
        self.blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.typed)
            .nth(k)
            .map(|(i, _)| i)
    }

    /// The index of the live block with sequence number `seq`, if there is one.
    pub fn find_seq(&self, seq: u64) -> Option<usize> {
        self.blocks.iter().position(|b| b.seq == seq)
    }

    /// Puts back a block [`remove`](Model::remove)d earlier and still live, unchanged (same
    /// pattern, same sequence number), after checking it overlaps no live block.
    pub fn reinsert(&mut self, b: Block) {
        if b.len > 0 {
            let (addr, end) = (b.ptr.addr().get(), b.ptr.addr().get() + b.len);
            if let Some((&s, &e)) = self.spans.range(..end).next_back() {
                assert!(
                    e <= addr,
                    "block [{addr:#x}, {end:#x}) overlaps live block [{s:#x}, {e:#x})"
                );
            }
            self.spans.insert(addr, end);
        }
        self.blocks.push(b);
    }

    /// The live blocks with a non-zero length, as (start, end), by start.
    pub fn spans(&self) -> Vec<(usize, usize)> {
        self.spans.iter().map(|(&s, &e)| (s, e)).collect()
    }

    /// Removes block `i` from the model (its memory is not touched).
    pub fn remove(&mut self, i: usize) -> Block {
        let b = self.blocks.swap_remove(i);
        if b.len > 0 {
            self.spans.remove(&b.ptr.addr().get());
        }
        b
    }

    /// Checks every live block's bytes.
    pub fn verify_all(&self) {
        for b in &self.blocks {
            b.verify(b.len);
        }
    }

    /// Forgets every block touched at or after `since` (made, grown or shrunk since: what a
    /// checkpoint's restore may free).
    pub fn forget_since(&mut self, since: u64) {
        self.forget_where(|b| b.touched >= since);
    }

    /// Forgets every block made at or after `since` (what a scope's exit frees).
    pub fn forget_made_since(&mut self, since: u64) {
        self.forget_where(|b| b.born >= since);
    }

    fn forget_where(&mut self, f: impl Fn(&Block) -> bool) {
        let mut i = 0;
        while i < self.blocks.len() {
            if f(&self.blocks[i]) {
                self.remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Gives every block tagged `from` the tag `to` (e.g. when the handle that served them is
    /// gone but the blocks live on).
    pub fn retag(&mut self, from: u8, to: u8) {
        for b in self.blocks.iter_mut().filter(|b| b.tag == from) {
            b.tag = to;
        }
    }

    /// The sum of the lengths of the live blocks tagged `tag`.
    pub fn bytes_tagged(&self, tag: u8) -> usize {
        self.blocks
            .iter()
            .filter(|b| b.tag == tag)
            .map(|b| b.len)
            .sum()
    }

    /// Forgets every block.
    pub fn clear(&mut self) {
        self.blocks.clear();
        self.spans.clear();
    }
}
