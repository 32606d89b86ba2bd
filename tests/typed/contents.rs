//! What the typed helpers place: one test per group of helpers on `&Arena` and `&ArenaRef`, the
//! README examples, zero-sized types and empty slices.

use crate::{addr, disjoint, range};
use arena_pool::allocator_api2::alloc::Layout;
use arena_pool::{AllocOrInitError, Arena, ArenaRef};

// ----- contents, one test per group of helpers -----

on_arena_and_ref!(single_values, |a| {
    let x = a.alloc(42u32);
    let y = a.try_alloc(7u64).unwrap();
    let z = a.alloc_with(|| [1u16, 2, 3]);
    let w = a.try_alloc_with(|| 'λ').unwrap();
    let ok: Result<&mut i64, &str> = a.alloc_try_with(|| Ok(-5));
    let ok = ok.unwrap();
    let try_ok: Result<&mut u8, AllocOrInitError<()>> = a.try_alloc_try_with(|| Ok(9u8));
    let try_ok = try_ok.unwrap();
    let p = a.alloc_layout(Layout::from_size_align(24, 64).unwrap());
    let q = a
        .try_alloc_layout(Layout::from_size_align(3, 8).unwrap())
        .unwrap();
    assert_eq!(p.as_ptr().addr() % 64, 0);
    assert_eq!(q.as_ptr().addr() % 8, 0);
    // SAFETY: `p` is a fresh block of 24 bytes and `q` one of 3 bytes, owned by this test.
    unsafe {
        p.as_ptr().write_bytes(0xAB, 24);
        q.as_ptr().write_bytes(0xCD, 3);
    }
    *x += 1;
    *y *= 3;
    z[2] = 30;
    // Everything is still intact: no block overlaps another.
    assert_eq!(*x, 43);
    assert_eq!(*y, 21);
    assert_eq!(*z, [1, 2, 30]);
    assert_eq!(*w, 'λ');
    assert_eq!(*ok, -5);
    assert_eq!(*try_ok, 9);
    // SAFETY: both blocks were fully initialised above and are not written any more.
    let (pb, qb) = unsafe {
        (
            std::slice::from_raw_parts(p.as_ptr(), 24),
            std::slice::from_raw_parts(q.as_ptr(), 3),
        )
    };
    assert!(pb.iter().all(|&b| b == 0xAB));
    assert!(qb.iter().all(|&b| b == 0xCD));
    assert_eq!(addr(x) % align_of::<u32>(), 0);
    assert_eq!(addr(y) % align_of::<u64>(), 0);
});

on_arena_and_ref!(slices, |a| {
    let copy = a.alloc_slice_copy(&[1u64, 2, 3, 4, 5]);
    let try_copy = a.try_alloc_slice_copy(&[9i8, -9]).unwrap();
    let clone = a.alloc_slice_clone(&["a", "bb", "ccc"]);
    let try_clone = a.try_alloc_slice_clone(&[Some(1u16), None]).unwrap();
    let fill_with = a.alloc_slice_fill_with(6, |i| i * i);
    let try_fill_with = a.try_alloc_slice_fill_with(4, |i| i as u8 + 1).unwrap();
    let fill_copy = a.alloc_slice_fill_copy(5, 0x5Au8);
    let try_fill_copy = a.try_alloc_slice_fill_copy(3, 1.5f64).unwrap();
    let fill_clone = a.alloc_slice_fill_clone(3, &"xy");
    let try_fill_clone = a.try_alloc_slice_fill_clone(2, &[7u32; 3]).unwrap();
    let fill_default = a.alloc_slice_fill_default::<u128>(3);
    let try_fill_default = a.try_alloc_slice_fill_default::<Option<u8>>(4).unwrap();
    let iter = a.alloc_slice_fill_iter((1..=4u32).map(|i| i * 10));
    let try_iter = a.try_alloc_slice_fill_iter("héllo".chars()).unwrap();

    copy[0] = 100;
    assert_eq!(copy, &[100, 2, 3, 4, 5]);
    assert_eq!(try_copy, &[9, -9]);
    assert_eq!(clone, &["a", "bb", "ccc"]);
    assert_eq!(try_clone, &[Some(1), None]);
    assert_eq!(fill_with, &[0, 1, 4, 9, 16, 25]);
    assert_eq!(try_fill_with, &[1, 2, 3, 4]);
    assert_eq!(fill_copy, &[0x5A; 5]);
    assert_eq!(try_fill_copy, &[1.5; 3]);
    assert_eq!(fill_clone, &["xy"; 3]);
    assert_eq!(try_fill_clone, &[[7; 3]; 2]);
    assert_eq!(fill_default, &[0; 3]);
    assert_eq!(try_fill_default, &[None; 4]);
    assert_eq!(iter, &[10, 20, 30, 40]);
    assert_eq!(try_iter, &['h', 'é', 'l', 'l', 'o']);

    let ranges = [
        range(copy),
        range(try_copy),
        range(clone),
        range(try_clone),
        range(fill_with),
        range(try_fill_with),
        range(fill_copy),
        range(try_fill_copy),
        range(fill_clone),
        range(try_fill_clone),
        range(fill_default),
        range(try_fill_default),
        range(iter),
        range(try_iter),
    ];
    for (i, r) in ranges.iter().enumerate() {
        for s in &ranges[i + 1..] {
            assert!(disjoint(r, s), "slices overlap: {r:?} and {s:?}");
        }
    }
    assert_eq!(fill_default.as_ptr().addr() % align_of::<u128>(), 0);
});

on_arena_and_ref!(sized_arrays, |a| {
    let d: &mut [u32; 16] = a.alloc_sized_slice_fill_default();
    let td: &mut [i16; 3] = a.try_alloc_sized_slice_fill_default().unwrap();
    let w: &mut [u64; 5] = a.alloc_sized_slice_fill_with(|i| (i * i) as u64);
    let tw = a
        .try_alloc_sized_slice_fill_with::<char, 4, _>(|i| (b'a' + i as u8) as char)
        .unwrap();
    let c: &mut [i32; 3] = a.alloc_sized_slice_copy(&[1, 2, 3]);
    let tc = a.try_alloc_sized_slice_copy(&[0.25f32; 2]).unwrap();
    d[15] = 15;
    c[1] = 0;
    assert_eq!(d[..15], [0; 15]);
    assert_eq!(d[15], 15);
    assert_eq!(*td, [0; 3]);
    assert_eq!(*w, [0, 1, 4, 9, 16]);
    assert_eq!(*tw, ['a', 'b', 'c', 'd']);
    assert_eq!(*c, [1, 0, 3]);
    assert_eq!(*tc, [0.25; 2]);
    assert!(disjoint(&range(&d[..]), &range(&w[..])));
    assert!(disjoint(&range(&c[..]), &range(&td[..])));
});

on_arena_and_ref!(strings, |a| {
    let s = a.alloc_str("hello world");
    let ts = a.try_alloc_str("grüße ✓").unwrap();
    let f = a.alloc_fmt(format_args!("{}-{:04}-{:?}", "a", 7, 'c'));
    let tf = a
        .try_alloc_fmt(format_args!("{:>5}|{:x}", "r", 255))
        .unwrap();
    // A format string without arguments takes the `as_str` shortcut.
    let plain = a.alloc_fmt(format_args!("plain text"));
    let try_plain = a.try_alloc_fmt(format_args!("ünïcode")).unwrap();
    s.make_ascii_uppercase();
    assert_eq!(s, "HELLO WORLD");
    assert_eq!(ts, "grüße ✓");
    assert_eq!(f, "a-0007-'c'");
    assert_eq!(tf, "    r|ff");
    assert_eq!(plain, "plain text");
    assert_eq!(try_plain, "ünïcode");
});

// ----- README examples -----

#[test]
fn readme_examples() {
    let arena = Arena::new();
    let x = arena.alloc(42u32);
    assert_eq!(*x, 42);
    let y = arena.alloc_with(|| 2 + 12);
    assert_eq!(*y, 14);
    let s = arena.alloc_slice_copy(&[1, 2, 3, 4, 5]);
    assert_eq!(s, &[1, 2, 3, 4, 5]);
    let arr: &mut [u8; 128] = arena.alloc_sized_slice_fill_default();
    assert!(arr.iter().all(|&b| b == 0));
    let arr = arena.alloc_slice_fill_with(12, |n| n as u8 + 1);
    assert_eq!(arr[2], 3);
    assert_eq!(arr.len(), 12);
    let hello = arena.alloc_str("hello world");
    assert_eq!(hello, "hello world");
    assert_eq!((*x, *y, s[4]), (42, 14, 5));

    let mut arena = Arena::new();
    let x = arena.alloc(42u32);
    assert_eq!(*x, 42);
    let first = addr(x);
    let held = arena.allocated_bytes();
    let chunks = arena.stats().chunks;
    assert_eq!(chunks, 1);
    arena.clear();
    assert_eq!(arena.used_bytes(), 0);
    let x = arena.alloc(10u32);
    assert_eq!(*x, 10);
    assert_eq!(addr(x), first, "clear did not reuse the same chunk");
    assert_eq!(arena.allocated_bytes(), held);
    assert_eq!(arena.stats().chunks, chunks);
    assert_eq!(arena.used_bytes(), 4);
}

// ----- zero-sized types and empty slices -----

on_arena_and_ref!(zero_sized_values_and_empty_slices_use_no_bytes, |a| {
    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    struct Zst;
    #[derive(Debug, Clone, Copy, PartialEq)]
    #[repr(align(64))]
    struct AlignedZst;

    // Take a chunk and leave the position deliberately misaligned for everything above 1.
    a.alloc(1u8);
    let before = a.used_bytes();
    let check = |what: &str| {
        assert_eq!(
            a.used_bytes(),
            before,
            "{what} changed used_bytes (zero-sized requests must not bump)"
        );
    };

    let unit: &mut () = a.alloc(());
    check("alloc(())");
    assert_eq!(*unit, ());
    assert_eq!(*a.try_alloc(()).unwrap(), ());
    check("try_alloc(())");
    assert_eq!(*a.alloc(Zst), Zst);
    check("alloc(Zst)");
    let aligned = a.alloc(AlignedZst);
    assert_eq!(addr(aligned) % 64, 0);
    check("alloc(AlignedZst)");
    assert_eq!(*a.alloc_with(|| Zst), Zst);
    check("alloc_with(Zst)");
    let zs = a.alloc_slice_fill_with(10, |_| Zst);
    assert_eq!(zs.len(), 10);
    check("alloc_slice_fill_with(10, Zst)");
    let zs = a.try_alloc_slice_fill_with(7, |_| AlignedZst).unwrap();
    assert_eq!((zs.len(), zs.as_ptr().addr() % 64), (7, 0));
    check("try_alloc_slice_fill_with(7, AlignedZst)");
    assert_eq!(a.alloc_slice_fill_iter((0..1000).map(|_| Zst)).len(), 1000);
    check("alloc_slice_fill_iter of 1000 ZSTs");
    let zarr: &mut [Zst; 5] = a.alloc_sized_slice_fill_default();
    assert_eq!(zarr.len(), 5);
    check("alloc_sized_slice_fill_default::<Zst, 5>");

    // Empty slices of non-zero-sized types.
    let e = a.alloc_slice_copy::<u64>(&[]);
    assert!(e.is_empty() && e.as_ptr().addr() % 8 == 0);
    check("alloc_slice_copy::<u64>(&[])");
    assert!(a.try_alloc_slice_copy::<u32>(&[]).unwrap().is_empty());
    check("try_alloc_slice_copy::<u32>(&[])");
    assert!(a.alloc_slice_clone::<&str>(&[]).is_empty());
    check("alloc_slice_clone::<&str>(&[])");
    assert!(a.alloc_slice_fill_with(0, |i| i as u64).is_empty());
    check("alloc_slice_fill_with::<u64>(0, ..)");
    assert!(a.alloc_slice_fill_copy(0, 1u32).is_empty());
    check("alloc_slice_fill_copy(0, 1u32)");
    assert!(a.alloc_slice_fill_clone(0, &"x").is_empty());
    check("alloc_slice_fill_clone(0, &str)");
    assert!(a.alloc_slice_fill_default::<u128>(0).is_empty());
    check("alloc_slice_fill_default::<u128>(0)");
    assert!(
        a.alloc_slice_fill_iter(std::iter::empty::<u64>())
            .is_empty()
    );
    check("alloc_slice_fill_iter(empty::<u64>)");
    let e: &mut [u64; 0] = a.alloc_sized_slice_fill_default();
    assert!(e.is_empty());
    check("alloc_sized_slice_fill_default::<u64, 0>");
    assert!(a.alloc_sized_slice_copy::<u32, 0>(&[]).is_empty());
    check("alloc_sized_slice_copy::<u32, 0>");
    assert_eq!(a.alloc_str(""), "");
    check("alloc_str(\"\")");
    assert_eq!(a.alloc_fmt(format_args!("")), "");
    check("alloc_fmt(\"\")");
    assert_eq!(a.alloc_fmt(format_args!("{}", "")), "");
    check("alloc_fmt(\"{}\", \"\")");
    let p = a.alloc_layout(Layout::from_size_align(0, 4096).unwrap());
    assert_eq!(p.as_ptr().addr() % 4096, 0);
    check("alloc_layout(size 0, align 4096)");
    let p = a
        .try_alloc_layout(Layout::from_size_align(0, 16).unwrap())
        .unwrap();
    assert_eq!(p.as_ptr().addr() % 16, 0);
    check("try_alloc_layout(size 0, align 16)");

    // And the position was really left alone: a byte goes right where the next one would have.
    let before_byte = a.used_bytes();
    a.alloc(2u8);
    assert_eq!(a.used_bytes(), before_byte + 1);
});
