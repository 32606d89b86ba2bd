//! [`DeserializeIn`] for hashbrown's [`HashMap`] and [`HashSet`] in any allocator, keys, values
//! and elements deserialized in the same allocator.

use core::fmt;
use core::hash::{BuildHasher, Hash};
use core::marker::PhantomData;

use ::serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use allocator_api2::alloc::Allocator;
use hashbrown::{HashMap, HashSet};

use super::{DeserializeIn, DeserializeInSeed, Makes, cautious, overflowed, refused};

/// The deserializer's error for a failed `try_reserve` of hashbrown's tables.
fn table_failed<E: de::Error>(e: hashbrown::TryReserveError) -> E {
    match e {
        hashbrown::TryReserveError::AllocError { layout } => refused(layout.size()),
        hashbrown::TryReserveError::CapacityOverflow => overflowed(),
    }
}

impl<'de, K, V, S, A> DeserializeIn<'de, A> for HashMap<K, V, S, A>
where
    K: DeserializeIn<'de, A> + Eq + Hash,
    V: DeserializeIn<'de, A>,
    S: BuildHasher + Default,
    A: Allocator + Clone,
{
    /// The table in `alloc`, keys and values deserialized in `alloc` too, with a hasher from
    /// `S::default()`. A key given twice keeps its last value (as serde's maps do); the first
    /// value is dropped.
    fn deserialize_in<D: Deserializer<'de>>(deserializer: D, alloc: A) -> Result<Self, D::Error> {
        struct MapVisitor<K, V, S, A>(A, Makes<(K, V, S)>);

        impl<'de, K, V, S, A> Visitor<'de> for MapVisitor<K, V, S, A>
        where
            K: DeserializeIn<'de, A> + Eq + Hash,
            V: DeserializeIn<'de, A>,
            S: BuildHasher + Default,
            A: Allocator + Clone,
        {
            type Value = HashMap<K, V, S, A>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut access: M) -> Result<Self::Value, M::Error> {
                let mut map = HashMap::with_hasher_in(S::default(), self.0.clone());
                map.try_reserve(cautious::<(K, V)>(access.size_hint()))
                    .map_err(table_failed)?;
                while let Some(key) =
                    access.next_key_seed(DeserializeInSeed::new(self.0.clone()))?
                {
                    let value = access.next_value_seed(DeserializeInSeed::new(self.0.clone()))?;
                    map.try_reserve(1).map_err(table_failed)?;
                    // Cannot allocate: room for one more entry was reserved just above.
                    map.insert(key, value);
                }
                Ok(map)
            }
        }

        deserializer.deserialize_map(MapVisitor(alloc, PhantomData))
    }
}

impl<'de, T, S, A> DeserializeIn<'de, A> for HashSet<T, S, A>
where
    T: DeserializeIn<'de, A> + Eq + Hash,
    S: BuildHasher + Default,
    A: Allocator + Clone,
{
    /// The table in `alloc`, elements deserialized in `alloc` too, with a hasher from
    /// `S::default()`. An element given twice is kept once (the first; the second is dropped).
    fn deserialize_in<D: Deserializer<'de>>(deserializer: D, alloc: A) -> Result<Self, D::Error> {
        struct SetVisitor<T, S, A>(A, Makes<(T, S)>);

        impl<'de, T, S, A> Visitor<'de> for SetVisitor<T, S, A>
        where
            T: DeserializeIn<'de, A> + Eq + Hash,
            S: BuildHasher + Default,
            A: Allocator + Clone,
        {
            type Value = HashSet<T, S, A>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }

            fn visit_seq<Q: SeqAccess<'de>>(self, mut seq: Q) -> Result<Self::Value, Q::Error> {
                let mut set = HashSet::with_hasher_in(S::default(), self.0.clone());
                set.try_reserve(cautious::<T>(seq.size_hint()))
                    .map_err(table_failed)?;
                while let Some(value) =
                    seq.next_element_seed(DeserializeInSeed::new(self.0.clone()))?
                {
                    set.try_reserve(1).map_err(table_failed)?;
                    // Cannot allocate: room for one more element was reserved just above.
                    set.insert(value);
                }
                Ok(set)
            }
        }

        deserializer.deserialize_seq(SetVisitor(alloc, PhantomData))
    }
}
