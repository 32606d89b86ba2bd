// Nested scopes, each allocating through its own `ArenaRef`.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let total = arena.with_scope(|outer| {
        let a = *outer.alloc(1u32);
        let b = outer.with_scope(|inner| *inner.alloc(2u32));
        a + b + *outer.alloc(3u32)
    });
    assert_eq!(total, 6);
}
