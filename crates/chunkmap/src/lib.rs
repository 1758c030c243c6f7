//! A sorted map kept in shared chunks: cloning it copies one pointer per chunk, a change copies
//! the one chunk it touches, and two maps that share most chunks are compared chunk by chunk.
//!
//! Each kind's objects live in one of these behind the snapshot's `Arc`. With a `BTreeMap` there,
//! a watch event on one of 10k HTTPProxies copied (and later dropped) the whole map, and every
//! comparison of two snapshots walked every key: a tenth of the controller's CPU per new app.
//! The pipeline's outputs (a fleet's clusters, its xDS resources by type) are kept in them too:
//! a stage patches the previous map with what changed, and the next stage, or an xDS stream,
//! finds the change by [`ChunkMap::diff`] without walking the shared chunks.

use std::borrow::Borrow;
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
    /// Chunk by chunk where both are laid out alike, shared chunks compared by pointer.
    fn eq(&self, other: &Self) -> bool {
        if self.len != other.len {
            return false;
        }
        if self.chunks.len() == other.chunks.len()
            && self.chunks.iter().zip(&other.chunks).all(|(a, b)| Arc::ptr_eq(a, b) || a.len() == b.len())
        {
            return self.chunks.iter().zip(&other.chunks).all(|(a, b)| Arc::ptr_eq(a, b) || a == b);
        }
        self.iter().eq(other.iter())
    }
}

impl<K: Eq, V: Eq> Eq for ChunkMap<K, V> {}

/// Iterates over the entries of a [`ChunkMap`], in key order.
pub type Iter<'a, K, V> = std::iter::Map<
    std::iter::FlatMap<std::slice::Iter<'a, Arc<Vec<(K, V)>>>, &'a [(K, V)], ChunkEntries<K, V>>,
    EntryRefs<K, V>,
>;
type ChunkEntries<K, V> = for<'b> fn(&'b Arc<Vec<(K, V)>>) -> &'b [(K, V)];
type EntryRefs<K, V> = for<'b> fn(&'b (K, V)) -> (&'b K, &'b V);

impl<K, V> ChunkMap<K, V> {
    /// An empty map.
    pub const fn new() -> Self {
        Self { chunks: Vec::new(), len: 0 }
    }

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
    fn chunk_of<Q: Ord + ?Sized>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
    {
        let i = self.chunks.partition_point(|c| c.last().is_some_and(|(last, _)| last.borrow() < key));
        i.min(self.chunks.len().saturating_sub(1))
    }

    /// Where `key` is: its chunk, and its place in the chunk or where it would go.
    fn find<Q: Ord + ?Sized>(&self, key: &Q) -> Option<(usize, Result<usize, usize>)>
    where
        K: Borrow<Q>,
    {
        if self.chunks.is_empty() {
            return None;
        }
        let c = self.chunk_of(key);
        Some((c, self.chunks[c].binary_search_by(|(k, _)| k.borrow().cmp(key))))
    }

    /// The value at `key`.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.get_key_value(key).map(|(_, v)| v)
    }

    /// The entry at `key`.
    pub fn get_key_value<Q: Ord + ?Sized>(&self, key: &Q) -> Option<(&K, &V)>
    where
        K: Borrow<Q>,
    {
        match self.find(key)? {
            (c, Ok(i)) => self.chunks[c].get(i).map(|(k, v)| (k, v)),
            _ => None,
        }
    }

    /// The value at `key`, to change in place (its chunk is copied first if shared).
    pub fn get_mut<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        match self.find(key)? {
            (c, Ok(i)) => Arc::make_mut(&mut self.chunks[c]).get_mut(i).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether there is an entry at `key`.
    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
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
    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
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

    /// Keeps the entries for which `keep` holds; chunks that keep every entry stay shared.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool) {
        for chunk in &mut self.chunks {
            let kept: Vec<bool> = chunk.iter().map(|(k, v)| keep(k, v)).collect();
            if kept.contains(&false) {
                let entries = chunk.iter().zip(&kept).filter(|(_, k)| **k).map(|(e, _)| e.clone());
                *chunk = Arc::new(entries.collect());
            }
        }
        self.chunks.retain(|c| !c.is_empty());
        self.len = self.chunks.iter().map(|c| c.len()).sum();
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
    /// The map of the entries; of entries with the same key, the last. Sorted input (a
    /// `BTreeMap`'s, another map's) is laid into chunks in one pass.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut entries: Vec<(K, V)> = iter.into_iter().collect();
        if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
            // Stable: of equal keys, the last one given stays last, and is the one kept.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut deduped: Vec<(K, V)> = Vec::with_capacity(entries.len());
            for e in entries {
                match deduped.last_mut() {
                    Some(last) if last.0 == e.0 => *last = e,
                    _ => deduped.push(e),
                }
            }
            entries = deduped;
        }
        let len = entries.len();
        let mut chunks = Vec::with_capacity(len.div_ceil(CHUNK));
        let mut rest = entries.into_iter();
        loop {
            let chunk: Vec<(K, V)> = rest.by_ref().take(CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            chunks.push(Arc::new(chunk));
        }
        Self { chunks, len }
    }
}

impl<K: Ord + Clone, V: Clone> Extend<(K, V)> for ChunkMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K: Ord + Clone + Borrow<Q>, V: Clone, Q: Ord + ?Sized> std::ops::Index<&Q> for ChunkMap<K, V> {
    type Output = V;

    /// The value at `key`; panics if there is none, as a `BTreeMap` does.
    fn index(&self, key: &Q) -> &V {
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
    fn built_from_entries_in_any_order_keeps_the_last_of_a_key() {
        let keys = sequence(7, 1000);
        let mut reference = BTreeMap::new();
        let mut entries = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            // Every key twice, the second value wins, as inserting one by one.
            entries.push((k % 300, i as u64));
            reference.insert(k % 300, i as u64);
        }
        let map: ChunkMap<u64, u64> = entries.into_iter().collect();
        assert_eq!(map.len(), reference.len());
        assert!(map.iter().map(|(k, v)| (*k, *v)).eq(reference.iter().map(|(k, v)| (*k, *v))));
        let sorted: ChunkMap<u64, u64> = reference.clone().into_iter().collect();
        assert_eq!(sorted, map);
        assert!(sorted.chunks.iter().all(|c| c.len() <= CHUNK), "laid out in chunks");
    }

    #[test]
    fn retain_and_get_mut_copy_only_the_chunks_they_change() {
        let map: ChunkMap<String, u64> = (0..1000u64).map(|i| (format!("k{i:04}"), i)).collect();
        let mut changed = map.clone();
        changed.retain(|_, v| *v != 500);
        *changed.get_mut("k0010").expect("present") = 7;
        assert_eq!(changed.len(), 999);
        assert_eq!(changed.get("k0010"), Some(&7));
        assert!(!changed.contains_key("k0500"));
        assert_eq!(changed["k0999"], 999);
        let mut seen = Vec::new();
        map.diff(
            &changed,
            |a, b| a == b,
            |k, _, _| {
                seen.push(k.clone());
                ControlFlow::Continue(())
            },
        );
        assert_eq!(seen, ["k0010", "k0500"]);
        let shared = map.chunks.iter().zip(&changed.chunks).filter(|(a, b)| Arc::ptr_eq(a, b)).count();
        assert_eq!(shared, map.chunks.len() - 2, "the other chunks stay shared");
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
