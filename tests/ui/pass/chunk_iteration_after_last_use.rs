// Once the arena's blocks are no longer used, `iter_allocated_chunks` reads its memory, and the
// arena allocates again after the slices are gone.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let x = arena.alloc(1u32);
    *x += 1;
    let total: usize = arena.iter_allocated_chunks().map(<[_]>::len).sum();
    assert_eq!(total, 4);
    assert_eq!(*arena.alloc(3u32), 3);
}
