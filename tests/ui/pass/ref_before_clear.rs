// A reference used before `clear()` is fine, and the arena is reused after.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let x = arena.alloc(42u32);
    assert_eq!(*x, 42);
    arena.clear();
    assert_eq!(*arena.alloc(10u32), 10);
}
