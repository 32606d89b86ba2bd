// References allocated through a scope guard itself borrow the guard: none outlives it.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let x;
    {
        let guard = arena.scope_guard();
        x = guard.alloc(1u32);
    }
    println!("{x}");
}
