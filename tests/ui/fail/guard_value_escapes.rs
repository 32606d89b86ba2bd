// A value allocated through a scope guard cannot outlive the guard.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let x;
    {
        let mut guard = arena.scope_guard();
        x = guard.scope().alloc(1u32);
    }
    println!("{x}");
}
