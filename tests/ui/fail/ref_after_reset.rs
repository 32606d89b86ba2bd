// A slice from the arena cannot be used after `reset()`.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let s = arena.alloc_slice_copy(&[1u8, 2, 3]);
    arena.reset();
    println!("{s:?}");
}
