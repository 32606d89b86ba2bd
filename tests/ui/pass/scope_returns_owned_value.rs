// A scope can return values that do not borrow it, and the parent's references live on.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let parent = arena.as_arena_ref_mut();
    let a = parent.alloc(1u32);
    let copied = parent.with_scope(|scope| *scope.alloc(2u32));
    let len = parent.with_scope(|scope| scope.alloc_str("temporary").len());
    assert_eq!((*a, copied, len), (1, 2, 9));
}
