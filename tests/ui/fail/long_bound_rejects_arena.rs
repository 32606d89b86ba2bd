// Code that asks for the blocks' own lifetime (`X::Blocks<'s>: 'r`) cannot turn an `Arena`'s
// references into ones that outlive the arena.
use arena_pool::{Arena, BumpAlloc};

fn keep<'s, 'r, X>(arena: &'s X) -> &'r u32
where
    X: BumpAlloc + ?Sized,
    X::Blocks<'s>: 'r,
{
    X::alloc::<'s, 'r, u32>(arena, 1)
}

fn main() {
    let x;
    {
        let arena = Arena::new();
        x = keep(&arena);
    }
    println!("{x}");
}
