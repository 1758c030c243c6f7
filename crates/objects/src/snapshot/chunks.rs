//! A sorted map kept in shared chunks: cloning it copies one pointer per chunk, a change copies
//! the one chunk it touches, and two maps that share most chunks are compared chunk by chunk.
//!
//! Each kind's objects live in one of these behind the snapshot's `Arc`. With a `BTreeMap` there,
//! a watch event on one of 10k HTTPProxies copied (and later dropped) the whole map, and every
//! comparison of two snapshots walked every key: a tenth of the controller's CPU per new app.

use std::ops::{Bound, ControlFlow, RangeBounds};
use std::sync::Arc;

/// Entries per chunk after a split; a chunk splits when it would hold twice as many.
const CHUNK: usize = 64;

/// A sorted map in shared chunks (see the module's documentation).
#[derive(Clone)]
pub struct ChunkMap<K, V> {
    /// Non-empty, each sorted, in key order.
    chunks: Vec<Arc<Vec<(K, V)>>>,
    len: usize,
}

impl<K, V> Default for ChunkMap<K, V> {
    fn default() -> Self {
        Self { chunks: Vec::new(), len: 0 }
    }
}

impl<K: std::fmt::Debug, V: std::fmt::Debug> std::fmt::Debug for ChunkMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: PartialEq, V: PartialEq> PartialEq for ChunkMap<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

/// Iterates over the entries of a [`ChunkMap`], in key order.
pub type Iter<'a, K, V> = std::iter::Map<
    std::iter::FlatMap<std::slice::Iter<'a, Arc<Vec<(K, V)>>>, &'a [(K, V)], ChunkEntries<K, V>>,
    EntryRefs<K, V>,
>;
type ChunkEntries<K, V> = for<'b> fn(&'b Arc<Vec<(K, V)>>) -> &'b [(K, V)];
type EntryRefs<K, V> = for<'b> fn(&'b (K, V)) -> (&'b K, &'b V);

impl<K, V> ChunkMap<K, V> {
    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries, in key order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        let entries: ChunkEntries<K, V> = |c| c.as_slice();
        let refs: EntryRefs<K, V> = |(k, v)| (k, v);
        self.chunks.iter().flat_map(entries).map(refs)
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// The values, in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + '_ {
        self.iter().map(|(_, v)| v)
    }
}

impl<K: Ord + Clone, V: Clone> ChunkMap<K, V> {
    /// The chunk that holds `key` or would: the first whose last key is not below it (the last
    /// chunk for a key above all).
    fn chunk_of(&self, key: &K) -> usize {
        let i = self.chunks.partition_point(|c| c.last().is_some_and(|(last, _)| last < key));
        i.min(self.chunks.len().saturating_sub(1))
    }

    /// Where `key` is: its chunk, and its place in the chunk or where it would go.
    fn find(&self, key: &K) -> Option<(usize, Result<usize, usize>)> {
        if self.chunks.is_empty() {
            return None;
        }
        let c = self.chunk_of(key);
        Some((c, self.chunks[c].binary_search_by(|(k, _)| k.cmp(key))))
    }

    /// The value at `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.get_key_value(key).map(|(_, v)| v)
    }

    /// The entry at `key`.
    pub fn get_key_value(&self, key: &K) -> Option<(&K, &V)> {
        match self.find(key)? {
            (c, Ok(i)) => self.chunks[c].get(i).map(|(k, v)| (k, v)),
            _ => None,
        }
    }

    /// Whether there is an entry at `key`.
    pub fn contains_key(&self, key: &K) -> bool {
        matches!(self.find(key), Some((_, Ok(_))))
    }

    /// Sets the value at `key`; returns the one it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        let Some((c, at)) = self.find(&key) else {
            self.chunks.push(Arc::new(vec![(key, value)]));
            self.len = 1;
            return None;
        };
        let chunk = Arc::make_mut(&mut self.chunks[c]);
        match at {
            Ok(i) => return Some(std::mem::replace(&mut chunk[i].1, value)),
            Err(i) => chunk.insert(i, (key, value)),
        }
        self.len += 1;
        if chunk.len() >= 2 * CHUNK {
            let tail = chunk.split_off(chunk.len() / 2);
            self.chunks.insert(c + 1, Arc::new(tail));
        }
        None
    }

    /// Removes the entry at `key`; returns its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let (c, Ok(i)) = self.find(key)? else { return None };
        let chunk = Arc::make_mut(&mut self.chunks[c]);
        let (_, value) = chunk.remove(i);
        let left = chunk.len();
        self.len -= 1;
        if left == 0 {
            self.chunks.remove(c);
        } else if left < CHUNK / 2 && c + 1 < self.chunks.len() && left + self.chunks[c + 1].len() <= CHUNK {
            // A small chunk takes its neighbour in, so removals leave no trail of tiny chunks.
            let next = self.chunks.remove(c + 1);
            let chunk = Arc::make_mut(&mut self.chunks[c]);
            chunk.extend(next.iter().cloned());
        }
        Some(value)
    }

    /// The entries whose keys are within `range`, in key order.
    pub fn range<R: RangeBounds<K>>(&self, range: R) -> impl Iterator<Item = (&K, &V)> + '_ {
        let (c, i) = match range.start_bound() {
            Bound::Unbounded => (0, 0),
            Bound::Included(k) => match self.find(k) {
                None => (0, 0),
                Some((c, Ok(i) | Err(i))) => (c, i),
            },
            Bound::Excluded(k) => match self.find(k) {
                None => (0, 0),
                Some((c, Ok(i))) => (c, i + 1),
                Some((c, Err(i))) => (c, i),
            },
        };
        let end = range.end_bound().cloned();
        self.chunks
            .iter()
            .skip(c)
            .enumerate()
            .flat_map(move |(n, chunk)| chunk[if n == 0 { i.min(chunk.len()) } else { 0 }..].iter())
            .map(|(k, v)| (k, v))
            .take_while(move |(k, _)| match &end {
                Bound::Unbounded => true,
                Bound::Included(e) => *k <= e,
                Bound::Excluded(e) => *k < e,
            })
    }

    /// Replaces values for which `replace` gives a new one; chunks with none to replace stay
    /// shared.
    pub fn replace_values(&mut self, mut replace: impl FnMut(&K, &V) -> Option<V>) {
        for chunk in &mut self.chunks {
            let found: Vec<(usize, V)> =
                chunk.iter().enumerate().filter_map(|(i, (k, v))| replace(k, v).map(|n| (i, n))).collect();
            if !found.is_empty() {
                let chunk = Arc::make_mut(chunk);
                for (i, v) in found {
                    chunk[i].1 = v;
                }
            }
        }
    }

    /// Walks the entries that differ from `self` to `after`: a key in one map only, or values
    /// that are not `same`. Chunks both maps share are skipped whole. `on` gets the key and the
    /// value before and after, and may stop the walk.
    pub fn diff<'a>(
        &'a self,
        after: &'a Self,
        same: impl Fn(&V, &V) -> bool,
        mut on: impl FnMut(&'a K, Option<&'a V>, Option<&'a V>) -> ControlFlow<()>,
    ) {
        let (mut a, mut b) = (Cursor::new(&self.chunks), Cursor::new(&after.chunks));
        loop {
            if a.shares_chunk_with(&b) {
                a.skip_chunk();
                b.skip_chunk();
                continue;
            }
            let flow = match (a.peek(), b.peek()) {
                (None, None) => return,
                (Some((ka, va)), Some((kb, vb))) if ka == kb => {
                    a.advance();
                    b.advance();
                    if same(va, vb) { ControlFlow::Continue(()) } else { on(ka, Some(va), Some(vb)) }
                }
                (Some((ka, va)), Some((kb, _))) if ka < kb => {
                    a.advance();
                    on(ka, Some(va), None)
                }
                (Some((ka, va)), None) => {
                    a.advance();
                    on(ka, Some(va), None)
                }
                (_, Some((kb, vb))) => {
                    b.advance();
                    on(kb, None, Some(vb))
                }
            };
            if flow.is_break() {
                return;
            }
        }
    }
}

/// A place in a [`ChunkMap`]'s chunks: the chunk, and the entry within it.
struct Cursor<'a, K, V> {
    chunks: &'a [Arc<Vec<(K, V)>>],
    chunk: usize,
    entry: usize,
}

impl<'a, K, V> Cursor<'a, K, V> {
    fn new(chunks: &'a [Arc<Vec<(K, V)>>]) -> Self {
        Self { chunks, chunk: 0, entry: 0 }
    }

    /// Whether both are at the start of the same shared chunk.
    fn shares_chunk_with(&self, other: &Self) -> bool {
        self.entry == 0
            && other.entry == 0
            && self.chunk < self.chunks.len()
            && other.chunk < other.chunks.len()
            && Arc::ptr_eq(&self.chunks[self.chunk], &other.chunks[other.chunk])
    }

    fn skip_chunk(&mut self) {
        self.chunk += 1;
    }

    fn peek(&self) -> Option<(&'a K, &'a V)> {
        self.chunks.get(self.chunk).map(|c| {
            let (k, v) = &c[self.entry];
            (k, v)
        })
    }

    fn advance(&mut self) {
        self.entry += 1;
        if self.entry == self.chunks[self.chunk].len() {
            (self.chunk, self.entry) = (self.chunk + 1, 0);
        }
    }
}

impl<K: Ord + Clone, V: Clone> FromIterator<(K, V)> for ChunkMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = Self::default();
        for (k, v) in iter {
            map.insert(k, v);
        }
        map
    }
}

impl<K: Ord + Clone, V: Clone> std::ops::Index<&K> for ChunkMap<K, V> {
    type Output = V;

    /// The value at `key`; panics if there is none, as a `BTreeMap` does.
    fn index(&self, key: &K) -> &V {
        self.get(key).expect("no entry for the key")
    }
}

impl<'a, K, V> IntoIterator for &'a ChunkMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A small deterministic sequence (no randomness crate here).
    fn sequence(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect()
    }

    fn diff_keys(a: &ChunkMap<u64, u64>, b: &ChunkMap<u64, u64>) -> Vec<u64> {
        let mut out = Vec::new();
        a.diff(
            b,
            |x, y| x == y,
            |k, _, _| {
                out.push(*k);
                ControlFlow::Continue(())
            },
        );
        out
    }

    #[test]
    fn behaves_as_a_sorted_map_through_inserts_and_removals() {
        let mut ours = ChunkMap::default();
        let mut model = BTreeMap::new();
        for (n, x) in sequence(7, 5000).into_iter().enumerate() {
            let key = x % 1500;
            if n % 3 == 2 {
                assert_eq!(ours.remove(&key), model.remove(&key));
            } else {
                assert_eq!(ours.insert(key, x), model.insert(key, x));
            }
            assert_eq!(ours.len(), model.len());
        }
        assert!(ours.iter().eq(model.iter()));
        assert!(ours.chunks.iter().all(|c| !c.is_empty() && c.len() < 2 * CHUNK));
        for key in [0, 1, 499, 500, 1499, 1500, 5000] {
            assert_eq!(ours.get(&key), model.get(&key));
            assert_eq!(ours.contains_key(&key), model.contains_key(&key));
            assert!(ours.range(key..).eq(model.range(key..)), "from {key}");
            assert!(ours.range(key..key + 300).eq(model.range(key..key + 300)), "{key}..");
            assert!(
                ours.range((Bound::Excluded(key), Bound::Unbounded))
                    .eq(model.range((Bound::Excluded(key), Bound::Unbounded)))
            );
        }
        // Removing almost everything leaves few chunks.
        let keys: Vec<u64> = model.keys().copied().collect();
        for key in keys.iter().skip(5) {
            ours.remove(key);
        }
        assert_eq!(ours.len(), 5);
        assert!(ours.chunks.len() <= 2, "{} chunks for 5 entries", ours.chunks.len());
    }

    #[test]
    fn a_change_copies_one_chunk_and_a_diff_skips_the_shared_ones() {
        let before: ChunkMap<u64, u64> = (0..10_000).map(|k| (k * 2, k)).collect();
        let mut after = before.clone();
        after.insert(5001, 1);
        after.insert(8000, 7);
        after.remove(&100);
        let shared = after.chunks.iter().filter(|c| before.chunks.iter().any(|b| Arc::ptr_eq(b, c))).count();
        assert!(shared + 3 >= after.chunks.len(), "{shared} of {} chunks shared", after.chunks.len());
        assert_eq!(diff_keys(&before, &after), [100, 5001, 8000]);
        assert_eq!(diff_keys(&after, &before), [100, 5001, 8000]);
        assert!(diff_keys(&before, &before.clone()).is_empty());

        // Equal maps built apart share no chunk and compare entry by entry.
        let apart: ChunkMap<u64, u64> = (0..10_000).rev().map(|k| (k * 2, k)).collect();
        assert!(diff_keys(&before, &apart).is_empty());
        assert_eq!(before, apart);
        let mut first = None;
        before.diff(
            &after,
            |x, y| x == y,
            |k, _, _| {
                first = Some(*k);
                ControlFlow::Break(())
            },
        );
        assert_eq!(first, Some(100), "the walk stops when asked");

        // Splits in the middle keep the rest shared.
        let mut grown = before.clone();
        for k in 0..300 {
            grown.insert(9001 + 2 * k, 0);
        }
        assert_eq!(diff_keys(&before, &grown).len(), 300);
        assert_eq!(diff_keys(&grown, &before).len(), 300);
    }

    #[test]
    fn values_are_replaced_in_the_chunks_that_hold_them_only() {
        let before: ChunkMap<u64, u64> = (0..1000).map(|k| (k, k)).collect();
        let mut after = before.clone();
        after.replace_values(|k, v| (*k == 500).then_some(v + 1));
        assert_eq!(after.get(&500), Some(&501));
        assert_eq!(diff_keys(&before, &after), [500]);
        let unshared = after.chunks.iter().filter(|c| !before.chunks.iter().any(|b| Arc::ptr_eq(b, c))).count();
        assert_eq!(unshared, 1);
    }
}
