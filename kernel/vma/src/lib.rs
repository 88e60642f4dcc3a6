//! The arithmetic of a user address space's regions (what Linux keeps in
//! its VMA tree): regions are kept in a `BTreeMap` keyed by start address,
//! each knowing its end, never overlapping. These functions find the
//! region holding an address, test a range for overlap or full cover,
//! split a region so that one starts at an address, cut a range out, and
//! find the highest free range below a base, as `mmap` does top-down.
//!
//! The kernel's region type carries what it needs (protection, file,
//! kind); it only tells this crate where it ends and how it splits, so the
//! rules are unit- and property-tested here on the host.

#![no_std]
#![deny(unsafe_code)]

extern crate alloc;

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// A region of an address space, keyed in the map by its start.
pub trait Area: Clone {
    /// Its end (exclusive).
    fn end(&self) -> u64;
    /// Splits it at `at` (`start < at < end`): `self` becomes
    /// `[start, at)` and the returned area is `[at, end)` (a file-backed
    /// region's upper part maps the file from further on).
    fn split(&mut self, start: u64, at: u64) -> Self;
}

/// The regions of one address space, by start address.
pub type Areas<A> = BTreeMap<u64, A>;

/// The region holding `addr`, with its start.
pub fn find<A: Area>(areas: &Areas<A>, addr: u64) -> Option<(u64, &A)> {
    areas
        .range(..=addr)
        .next_back()
        .filter(|(_, a)| addr < a.end())
        .map(|(&s, a)| (s, a))
}

/// Whether any region meets `[start, end)`.
pub fn overlaps<A: Area>(areas: &Areas<A>, start: u64, end: u64) -> bool {
    start < end && (find(areas, start).is_some() || areas.range(start..end).next().is_some())
}

/// Whether regions cover every address of `[start, end)`, without a hole.
pub fn covered<A: Area>(areas: &Areas<A>, start: u64, end: u64) -> bool {
    let mut cur = start;
    while cur < end {
        match find(areas, cur) {
            Some((_, a)) => cur = a.end(),
            None => return false,
        }
    }
    true
}

/// Whether some region ends above `addr` (Linux's `find_vma(mm, addr) !=
/// NULL`): the one holding it or any higher one.
pub fn any_above<A: Area>(areas: &Areas<A>, addr: u64) -> bool {
    find(areas, addr).is_some() || areas.range(addr..).next().is_some()
}

/// Splits the region holding `addr`, if any, so that one starts there.
pub fn split_at<A: Area>(areas: &mut Areas<A>, addr: u64) {
    let Some(start) = find(areas, addr).map(|(s, _)| s).filter(|&s| s < addr) else {
        return;
    };
    if let Some(lower) = areas.get_mut(&start) {
        let upper = lower.split(start, addr);
        areas.insert(addr, upper);
    }
}

/// Cuts `[start, end)` out of every region (splitting those that straddle
/// its edges) and returns what was removed, by start.
pub fn remove_range<A: Area>(areas: &mut Areas<A>, start: u64, end: u64) -> Vec<(u64, A)> {
    if start >= end {
        return Vec::new();
    }
    split_at(areas, start);
    split_at(areas, end);
    let doomed: Vec<u64> = areas.range(start..end).map(|(&s, _)| s).collect();
    doomed
        .into_iter()
        .filter_map(|s| areas.remove(&s).map(|a| (s, a)))
        .collect()
}

/// The highest `len`-byte range that is free, ends at or below `base` and
/// starts at or above `floor` (`mmap`'s top-down placement).
pub fn find_free_top_down<A: Area>(areas: &Areas<A>, len: u64, base: u64, floor: u64) -> Option<u64> {
    let mut top = base;
    for (&s, a) in areas.range(..base).rev() {
        if a.end() <= top && top - a.end() >= len && top - len >= floor {
            return Some(top - len);
        }
        top = top.min(s);
    }
    floor.checked_add(len).filter(|&need| top >= need).map(|_| top - len)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use proptest::prelude::*;
    use std::vec;

    /// A test region: its end and the "file offset" of its start, to check
    /// that splits carry offsets along.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct R {
        end: u64,
        off: u64,
        tag: u8,
    }

    impl Area for R {
        fn end(&self) -> u64 {
            self.end
        }
        fn split(&mut self, start: u64, at: u64) -> R {
            let upper = R {
                end: self.end,
                off: self.off + (at - start),
                tag: self.tag,
            };
            self.end = at;
            upper
        }
    }

    fn map(regions: &[(u64, u64, u8)]) -> Areas<R> {
        regions
            .iter()
            .map(|&(s, e, t)| {
                (
                    s,
                    R {
                        end: e,
                        off: s * 10,
                        tag: t,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn find_overlaps_and_covered_follow_region_edges() {
        let m = map(&[(10, 20, 1), (20, 30, 2), (40, 50, 3)]);
        assert_eq!(find(&m, 19).map(|(s, _)| s), Some(10));
        assert_eq!(find(&m, 20).map(|(s, _)| s), Some(20));
        assert!(find(&m, 30).is_none());
        assert!(overlaps(&m, 35, 41) && !overlaps(&m, 30, 40) && !overlaps(&m, 45, 45));
        assert!(covered(&m, 12, 30) && !covered(&m, 12, 31));
        assert!(any_above(&m, 45) && any_above(&m, 31) && !any_above(&m, 50));
    }

    #[test]
    fn removing_the_middle_of_a_region_leaves_both_ends_with_their_offsets() {
        let mut m = map(&[(10, 40, 7)]);
        let gone = remove_range(&mut m, 20, 30);
        assert_eq!(
            gone,
            vec![(
                20,
                R {
                    end: 30,
                    off: 110,
                    tag: 7
                }
            )]
        );
        assert_eq!(
            m.get(&10),
            Some(&R {
                end: 20,
                off: 100,
                tag: 7
            })
        );
        assert_eq!(
            m.get(&30),
            Some(&R {
                end: 40,
                off: 120,
                tag: 7
            })
        );
    }

    #[test]
    fn top_down_search_takes_the_highest_gap_that_fits_above_the_floor() {
        let m = map(&[(90, 100, 1), (60, 85, 2)]);
        assert_eq!(find_free_top_down(&m, 5, 100, 10), Some(85));
        assert_eq!(find_free_top_down(&m, 6, 100, 10), Some(54));
        assert_eq!(find_free_top_down(&m, 50, 100, 10), Some(10));
        assert_eq!(find_free_top_down(&m, 51, 100, 10), None);
        assert_eq!(find_free_top_down(&m, u64::MAX, 100, 10), None);
    }

    /// Page-granular model: which tag (if any) holds each of 64 pages.
    const PAGES: u64 = 64;

    fn model_of(m: &Areas<R>) -> [Option<(u8, u64)>; PAGES as usize] {
        let mut out = [None; PAGES as usize];
        for (&s, r) in m {
            for p in s..r.end {
                out[p as usize] = Some((r.tag, r.off + (p - s)));
            }
        }
        out
    }

    fn well_formed(m: &Areas<R>) -> bool {
        let mut prev_end = 0;
        m.iter().all(|(&s, r)| {
            let ok = s >= prev_end && s < r.end;
            prev_end = r.end;
            ok
        })
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64, u64, u8),
        Remove(u64, u64),
        Split(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..PAGES, 1..16u64, any::<u8>()).prop_map(|(s, l, t)| Op::Insert(s, (s + l).min(PAGES), t)),
            (0..PAGES, 0..PAGES).prop_map(|(a, b)| Op::Remove(a.min(b), a.max(b))),
            (0..PAGES).prop_map(Op::Split),
        ]
    }

    proptest! {
        #[test]
        fn every_operation_keeps_regions_disjoint_and_matches_a_page_model(ops in proptest::collection::vec(op(), 1..40)) {
            let mut m: Areas<R> = Areas::new();
            let mut model = [None::<(u8, u64)>; PAGES as usize];
            for op in ops {
                match op {
                    Op::Insert(s, e, t) => {
                        if s < e && !overlaps(&m, s, e) {
                            m.insert(s, R { end: e, off: s * 10, tag: t });
                            for p in s..e {
                                model[p as usize] = Some((t, s * 10 + (p - s)));
                            }
                        }
                    }
                    Op::Remove(s, e) => {
                        let gone = remove_range(&mut m, s, e);
                        for (gs, g) in gone {
                            prop_assert!(gs >= s && g.end <= e);
                        }
                        for p in s..e {
                            model[p as usize] = None;
                        }
                    }
                    Op::Split(a) => split_at(&mut m, a),
                }
                prop_assert!(well_formed(&m));
                prop_assert_eq!(model_of(&m), model);
                for p in 0..PAGES {
                    prop_assert_eq!(find(&m, p).is_some(), model[p as usize].is_some());
                }
            }
        }

        #[test]
        fn top_down_search_returns_the_highest_free_fit(regions in proptest::collection::vec((0..PAGES, 1..8u64), 0..10), len in 1..20u64, floor in 0..8u64) {
            let mut m: Areas<R> = Areas::new();
            for (s, l) in regions {
                let e = (s + l).min(PAGES);
                if !overlaps(&m, s, e) {
                    m.insert(s, R { end: e, off: 0, tag: 0 });
                }
            }
            let free = |a: u64| a >= floor && a + len <= PAGES && !overlaps(&m, a, a + len);
            let want = (floor..=PAGES.saturating_sub(len)).rev().find(|&a| free(a));
            prop_assert_eq!(find_free_top_down(&m, len, PAGES, floor), want);
        }
    }
}
