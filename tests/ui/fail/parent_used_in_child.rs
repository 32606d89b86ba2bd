// The parent `ArenaRef` cannot be used inside its child's closure.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let parent = arena.as_arena_ref_mut();
    parent.with_scope(|child| {
        parent.alloc(1u8);
        child.alloc(2u8);
    });
}
