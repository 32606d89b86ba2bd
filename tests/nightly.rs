//! The `nightly` feature: allocator-api2's trait is `core::alloc::Allocator`, so std's own
//! collections take every type of the crate. Run with `cargo +nightly test --features nightly`
//! on the nightly this project is tested on.
#![cfg(feature = "nightly")]
#![feature(allocator_api)]

use std::alloc::Allocator;
use std::boxed::Box;
use std::collections::VecDeque;
use std::rc::Rc;
use std::vec::Vec;

use arena_pool::{Arena, ArenaRef, Pool, SizeClassPool, SyncArena, SyncPool};

/// Exercises std's `Vec`, `Box`, `VecDeque` and `Rc` on one allocator.
fn std_collections_on<A: Allocator + Copy>(alloc: A) {
    let mut v: Vec<u64, A> = Vec::new_in(alloc);
    v.extend(0..1000);
    assert_eq!(v.iter().sum::<u64>(), 499_500);
    let b = Box::new_in(String::from("boxed"), alloc);
    assert_eq!(*b, "boxed");
    let mut q: VecDeque<u32, A> = VecDeque::new_in(alloc);
    for i in 0..100 {
        q.push_back(i);
        q.push_front(i);
    }
    assert_eq!(q.len(), 200);
    let rc = Rc::new_in([1u8; 48], alloc);
    let rc2 = Rc::clone(&rc);
    assert_eq!(rc2[47], 1);
}

#[test]
fn std_vec_grows_in_place_on_the_arena() {
    let arena = Arena::new();
    let mut v: Vec<u32, &Arena> = Vec::new_in(&arena);
    let mut in_place = 0;
    for i in 0..10_000 {
        let (cap, ptr, room) = (v.capacity(), v.as_ptr(), arena.chunk_capacity());
        v.push(i);
        if cap != 0 && v.capacity() != cap && room >= (v.capacity() - cap) * 4 {
            assert_eq!(v.as_ptr(), ptr, "grown in place when the chunk had room");
            in_place += 1;
        }
    }
    assert!(in_place >= 3, "{in_place} growths in place");
    assert!(v.iter().copied().eq(0..10_000));
    assert_eq!(arena.used_bytes(), v.capacity() * 4);
    // It is `core`'s trait now.
    fn takes_core<A: core::alloc::Allocator>(_: A) {}
    takes_core(&arena);
}

#[test]
fn std_collections_on_every_type() {
    let mut arena = Arena::new();
    std_collections_on(&arena);
    arena.with_scope(|scope: &mut ArenaRef| std_collections_on(&*scope));
    std_collections_on(&Pool::for_type::<[u64; 4]>());
    std_collections_on(&SizeClassPool::new());
    let shared = SyncArena::new();
    std_collections_on(&shared);
    std_collections_on(&shared.local());
    std_collections_on(&SyncPool::for_type::<[u64; 4]>());
}

#[test]
fn std_vec_sent_between_threads_on_sync_pool() {
    let pool = SyncPool::for_type::<[u64; 2]>();
    let mut v: Vec<u64, &SyncPool> = Vec::new_in(&pool);
    v.extend(0..1000);
    std::thread::scope(|s| {
        s.spawn(move || assert!(v.into_iter().eq(0..1000)));
    });
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn hashbrown_with_its_nightly_feature() {
    let arena = Arena::new();
    let mut map = hashbrown::HashMap::new_in(&arena);
    for i in 0..1000u64 {
        map.insert(i, i * 2);
    }
    assert_eq!(map[&500], 1000);
    let pool = SizeClassPool::new();
    let mut set = hashbrown::HashSet::new_in(&pool);
    set.extend(0..500u32);
    assert!(set.contains(&499));
}
