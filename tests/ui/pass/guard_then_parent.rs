// A scope guard used, dropped, then the parent used again.
fn main() {
    let mut arena = arena_pool::Arena::new();
    {
        let mut guard = arena.scope_guard();
        let x = *guard.scope().alloc(1u32);
        assert_eq!(x, 1);
    }
    arena.alloc(2u8);
    assert_eq!(arena.used_bytes(), 1);
}
