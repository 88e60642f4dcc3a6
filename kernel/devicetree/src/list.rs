//! A fixed-capacity list: the parser runs before the kernel has a heap.

use core::fmt;
use core::ops::Deref;

/// Up to `N` items of `T`, stored inline.
///
/// Pushing onto a full list drops the item and counts it in
/// [`dropped`](List::dropped) instead of failing: a device tree that lists
/// more memory banks or CPUs than the kernel has room for still boots, with
/// the first `N` of them, and the kernel can say how many it ignored.
#[derive(Clone, Copy)]
pub struct List<T, const N: usize> {
    items: [T; N],
    len: usize,
    dropped: usize,
}

impl<T: Copy + Default, const N: usize> List<T, N> {
    /// How many items the list holds at most.
    pub const CAPACITY: usize = N;

    /// An empty list.
    pub fn new() -> Self {
        Self {
            items: [T::default(); N],
            len: 0,
            dropped: 0,
        }
    }

    /// Appends `item`; returns false (and counts the item as dropped) if
    /// the list is full.
    pub fn push(&mut self, item: T) -> bool {
        match self.items.get_mut(self.len) {
            Some(slot) => {
                *slot = item;
                self.len = self.len.saturating_add(1);
                true
            }
            None => {
                self.dropped = self.dropped.saturating_add(1);
                false
            }
        }
    }
}

impl<T, const N: usize> List<T, N> {
    /// The items, in the order they were pushed.
    pub fn as_slice(&self) -> &[T] {
        self.items.get(..self.len).unwrap_or(&[])
    }

    /// How many items did not fit and were ignored.
    pub fn dropped(&self) -> usize {
        self.dropped
    }
}

impl<T: Copy + Default, const N: usize> Default for List<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> Deref for List<T, N> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<'l, T, const N: usize> IntoIterator for &'l List<T, N> {
    type Item = &'l T;
    type IntoIter = core::slice::Iter<'l, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl<T: PartialEq, const N: usize> PartialEq for List<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice() && self.dropped == other.dropped
    }
}

impl<T: Eq, const N: usize> Eq for List<T, N> {}

impl<T: fmt::Debug, const N: usize> fmt::Debug for List<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()?;
        if self.dropped != 0 {
            write!(f, " (+{} dropped)", self.dropped)?;
        }
        Ok(())
    }
}
