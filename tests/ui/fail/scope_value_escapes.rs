// A value allocated in a scope cannot be returned out of `with_scope`.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let x = arena.with_scope(|scope| scope.alloc(1u32));
    println!("{x}");
}
