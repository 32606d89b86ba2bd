//! Graph frame and graph churn: adjacency lists built by pushes, then a breadth-first search; the
//! churn case keeps the graph and replaces some of its edges before each frame's search.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;
use arena_pool_benches::XorShift;

use super::{Map, new_map};

pub(super) const NODES: usize = 10_000;
pub(super) const EDGES: usize = 50_000;
/// Frames of the churn case, and the edges replaced before each (5% of them).
pub(super) const FRAMES: usize = 16;
const REPLACED: usize = EDGES / 20;

/// The edges `(from, to)`, uniformly random.
pub(super) fn generate_edges() -> std::vec::Vec<(u32, u32)> {
    let mut rng = XorShift::new(0x6a09_e667_f3bc_c909);
    (0..EDGES)
        .map(|_| {
            (
                rng.below(NODES as u64) as u32,
                rng.below(NODES as u64) as u32,
            )
        })
        .collect()
}

/// Adjacency lists in `a`: `NODES` empty vectors, then one push per edge (no reserve).
fn build_graph<Al: Allocator + Copy>(edges: &[(u32, u32)], a: Al) -> Vec<Vec<u32, Al>, Al> {
    let mut adjacency = Vec::with_capacity_in(NODES, a);
    for _ in 0..NODES {
        adjacency.push(Vec::new_in(a));
    }
    for &(from, to) in edges {
        adjacency[from as usize].push(to);
    }
    adjacency
}

/// What a breadth-first search from node 0 checks: the nodes reached and the wrapping sum of
/// `node * 31 + distance` over them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct BfsSum {
    reached: u64,
    sum: u64,
}

/// Breadth-first search from node 0: a vector as the queue (a head index, no ring), the
/// distances in a map, all in `a`.
fn bfs<Al: Allocator + Copy>(adjacency: &[Vec<u32, Al>], a: Al) -> BfsSum {
    let mut distances: Map<u32, u32, Al> = new_map(a);
    let mut queue = Vec::new_in(a);
    distances.insert(0, 0);
    queue.push(0u32);
    let mut result = BfsSum { reached: 1, sum: 0 };
    let mut head = 0;
    while let Some(&node) = queue.get(head) {
        head += 1;
        let next_distance = distances[&node] + 1;
        for &next in adjacency[node as usize].iter() {
            if let hashbrown::hash_map::Entry::Vacant(slot) = distances.entry(next) {
                slot.insert(next_distance);
                queue.push(next);
                result.reached += 1;
                result.sum = result
                    .sum
                    .wrapping_add(u64::from(next) * 31 + u64::from(next_distance));
            }
        }
    }
    result
}

/// What the churn case checks: the nodes reached over all frames, and the frames' sums folded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ChurnSum {
    reached: u64,
    hash: u64,
}

/// One unit of the graph frame: build, search, drop.
pub(super) fn graph_frame<Al: Allocator + Copy>(edges: &[(u32, u32)], a: Al) -> BfsSum {
    let adjacency = build_graph(edges, a);
    bfs(&adjacency, a)
}

/// One unit of the graph churn: build, then `FRAMES` times replace `REPLACED` edges (a random
/// edge of a random node with edges is removed, by `swap_remove`; a random edge is added) and
/// search; drop.
pub(super) fn graph_churn<Al: Allocator + Copy>(edges: &[(u32, u32)], a: Al) -> ChurnSum {
    let mut adjacency = build_graph(edges, a);
    let mut rng = XorShift::new(0xbb67_ae85_84ca_a73b);
    let mut result = ChurnSum::default();
    for _ in 0..FRAMES {
        for _ in 0..REPLACED {
            let list = loop {
                let list = &mut adjacency[rng.below(NODES as u64) as usize];
                if !list.is_empty() {
                    break list;
                }
            };
            let gone = rng.below(list.len() as u64) as usize;
            list.swap_remove(gone);
            let from = rng.below(NODES as u64) as usize;
            adjacency[from].push(rng.below(NODES as u64) as u32);
        }
        let frame = bfs(&adjacency, a);
        result.reached += frame.reached;
        result.hash = result.hash.wrapping_mul(31).wrapping_add(frame.sum);
    }
    result
}
