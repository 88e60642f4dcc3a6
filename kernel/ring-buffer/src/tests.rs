extern crate std;

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::vec;
use std::vec::Vec as StdVec;

/// A payload that names its event: `n` as 8 bytes, then filler bytes.
fn payload(n: u64, len: usize) -> StdVec<u8> {
    let mut p = n.to_le_bytes().to_vec();
    p.resize(len.max(8), (n % 251) as u8);
    p
}

fn id(data: &[u8]) -> u64 {
    u64::from_le_bytes(data[..8].try_into().unwrap())
}

fn ids(b: &CpuBuffer) -> StdVec<u64> {
    b.iter().map(|e| id(e.unwrap().data)).collect()
}

fn drain(b: &mut CpuBuffer) -> StdVec<(u64, u64)> {
    let mut out = vec![];
    while let Some(c) = b.consume() {
        out.push((c.event.ts, id(c.event.data)));
    }
    out
}

fn page_bytes(b: &CpuBuffer, i: usize) -> &[u8] {
    &b.slots[i].page[..]
}

#[test]
fn event_length_follows_rb_calculate_event_length() {
    // Small: header word plus the payload rounded up to 4.
    assert_eq!(event_length(0), 8);
    assert_eq!(event_length(4), 8);
    // 12 would look like a time extend plus a hole: made 16.
    assert_eq!(event_length(5), 16);
    assert_eq!(event_length(8), 16);
    assert_eq!(event_length(27), 32);
    assert_eq!(event_length(112), 116);
    // Large: a length word too.
    assert_eq!(event_length(113), 124);
    assert_eq!(event_length(BUF_MAX_DATA_SIZE), BUF_PAGE_SIZE);
}

#[test]
fn events_are_written_in_linux_binary_layout() {
    let mut b = CpuBuffer::with_pages(2).unwrap();
    b.write(1000, &[0xaa; 27]).unwrap(); // the `hello\n` marker's size
    b.write(1250, &[0xbb; 200]).unwrap();
    let big_delta = 1250 + (5u64 << 27) + 77;
    b.write(big_delta, &[0xcc; 4]).unwrap();
    let p = page_bytes(&b, 0);
    assert_eq!(u64::from_le_bytes(p[0..8].try_into().unwrap()), 1000, "page time stamp");
    let d = &p[16..];
    // type_len 7 (28 bytes), delta 0: first event of its page.
    assert_eq!(u32::from_le_bytes(d[0..4].try_into().unwrap()), 7);
    assert_eq!(&d[4..31], &[0xaa; 27]);
    assert_eq!(d[31], 0, "padding is zero");
    // type_len 0 with the length word (200 + 4), delta 250.
    assert_eq!(u32::from_le_bytes(d[32..36].try_into().unwrap()), 250 << 5);
    assert_eq!(u32::from_le_bytes(d[36..40].try_into().unwrap()), 204);
    // A time extend (type 30) carrying the large delta, then delta 0.
    let te = u32::from_le_bytes(d[240..244].try_into().unwrap());
    assert_eq!(te & 0x1f, RINGBUF_TYPE_TIME_EXTEND);
    let hi = u32::from_le_bytes(d[244..248].try_into().unwrap());
    assert_eq!(u64::from(te >> 5) | (u64::from(hi) << 27), (5u64 << 27) + 77);
    assert_eq!(u32::from_le_bytes(d[248..252].try_into().unwrap()), 1);
    let commit = u64::from_le_bytes(p[8..16].try_into().unwrap());
    assert_eq!(commit, 256);
    let got: StdVec<(u64, usize)> = b.iter().map(|e| e.unwrap()).map(|e| (e.ts, e.data.len())).collect();
    assert_eq!(got, vec![(1000, 28), (1250, 200), (big_delta, 4)]);
    assert_eq!(b.stats().bytes, 256);
}

#[test]
fn consume_takes_events_in_order_and_counts_reads() {
    let mut b = CpuBuffer::with_pages(16).unwrap();
    for i in 0..300u64 {
        b.write(10 * i, &payload(i, 8 + (i as usize % 150))).unwrap();
    }
    assert_eq!(b.stats().entries, 300);
    let got = drain(&mut b);
    assert_eq!(got.len(), 300);
    for (i, (ts, n)) in got.iter().enumerate() {
        assert_eq!((*ts, *n), (10 * i as u64, i as u64));
    }
    let s = b.stats();
    assert_eq!((s.entries, s.read_events, s.overrun, s.bytes), (0, 300, 0, 0));
    assert!(b.consume().is_none());
    // Writing after a full drain continues on the same page.
    b.write(5000, &payload(7, 8)).unwrap();
    assert_eq!(drain(&mut b), vec![(5000, 7)]);
}

#[test]
fn overwrite_mode_drops_oldest_page_and_counts_overrun() {
    let mut b = CpuBuffer::with_pages(2).unwrap();
    let per_page = BUF_PAGE_SIZE / event_length(60);
    let n = 5 * per_page as u64;
    for i in 0..n {
        b.write(i, &payload(i, 60)).unwrap();
    }
    let s = b.stats();
    assert_eq!(s.committed, n);
    assert_eq!(s.entries + s.overrun + s.read_events, n);
    assert!(s.overrun >= 3 * per_page as u64, "{s:?}");
    assert_eq!(s.dropped_events, 0);
    assert_eq!(s.written(), n - s.read_events);
    // The newest events survive, without gaps.
    let left = ids(&b);
    assert_eq!(left.len() as u64, s.entries);
    assert_eq!(*left.last().unwrap(), n - 1);
    assert!(left.windows(2).all(|w| w[1] == w[0] + 1));
    // The first read reports the loss.
    let c = b.consume().unwrap();
    assert_eq!(c.lost, s.overrun);
    assert_eq!(b.consume().unwrap().lost, 0);
}

#[test]
fn non_overwrite_mode_drops_new_events_and_counts_them() {
    let mut b = CpuBuffer::with_pages(2).unwrap();
    b.set_overwrite(false);
    let mut refused = 0;
    for i in 0..500u64 {
        match b.write(i, &payload(i, 60)) {
            Ok(()) => {}
            Err(WriteError::Full) => refused += 1,
            Err(e) => panic!("{e:?}"),
        }
    }
    let s = b.stats();
    assert_eq!(s.dropped_events, refused);
    assert_eq!(s.overrun, 0);
    assert_eq!(s.entries + refused, 500);
    // The oldest events are the ones kept.
    let left = ids(&b);
    assert_eq!(left, (0..s.entries).collect::<StdVec<_>>());
    // Reading frees the oldest page; writing resumes.
    for _ in 0..BUF_PAGE_SIZE / event_length(60) {
        b.consume().unwrap();
    }
    b.write(1000, &payload(1000, 60)).unwrap();
    assert_eq!(*ids(&b).last().unwrap(), 1000);
}

#[test]
fn iteration_does_not_consume() {
    let mut b = CpuBuffer::with_pages(3).unwrap();
    for i in 0..200u64 {
        b.write(i * 3, &payload(i, 40)).unwrap();
    }
    let before = b.stats();
    assert_eq!(ids(&b), (0..200).collect::<StdVec<_>>());
    assert_eq!(b.stats(), before);
    assert_eq!(b.peek().map(|e| e.ts), Some(0));
    b.consume().unwrap();
    assert_eq!(ids(&b)[0], 1);
    assert_eq!(b.oldest_event_ts(), Some(3));
}

#[test]
fn dropped_reservation_is_discarded() {
    let mut b = CpuBuffer::with_pages(2).unwrap();
    b.write(1, &payload(1, 8)).unwrap();
    {
        let mut r = b.reserve(2, 16).unwrap();
        r.copy_from_slice(&[9; 16]);
    }
    b.write(3, &payload(3, 8)).unwrap();
    assert_eq!(drain(&mut b), vec![(1, 1), (3, 3)]);
    assert_eq!(b.stats().committed, 2);
}

#[test]
fn reserve_uninit_on_reused_pages_zeroes_only_the_padding_after_the_payload() {
    let mut b = CpuBuffer::with_pages(2).unwrap();
    // Wrap the ring several times over events of 0xff bytes, so that every
    // byte the small events land on is stale.
    for ts in 1..2000 {
        b.write(ts, &[0xff; 60]).unwrap();
    }
    let mut ts = 2000;
    for n in 0u64..600 {
        // 9 bytes: 3 bytes of padding after each payload.
        let mut r = b.reserve_uninit(ts, 9).unwrap();
        r[..8].copy_from_slice(&n.to_le_bytes());
        r[8] = 0xab;
        r.commit();
        ts += 1 + n % 3 * 1000;
    }
    let got: StdVec<_> = b.iter().map(|e| e.unwrap().data.to_vec()).collect();
    assert!(got.len() > 100);
    for d in &got {
        assert_eq!(d.len(), 12);
        assert_eq!(&d[8..], &[0xab, 0, 0, 0]);
    }
    // The same bytes as a buffer whose events were reserved zeroed.
    let mut z = CpuBuffer::with_pages(2).unwrap();
    for ts in 1..2000 {
        z.write(ts, &[0xff; 60]).unwrap();
    }
    let mut ts = 2000;
    for n in 0u64..600 {
        let mut r = z.reserve(ts, 9).unwrap();
        r[..8].copy_from_slice(&n.to_le_bytes());
        r[8] = 0xab;
        r.commit();
        ts += 1 + n % 3 * 1000;
    }
    let want: StdVec<_> = z.iter().map(|e| (e.unwrap().ts, e.unwrap().data.to_vec())).collect();
    let got: StdVec<_> = b.iter().map(|e| (e.unwrap().ts, e.unwrap().data.to_vec())).collect();
    assert_eq!(got, want);
}

#[test]
fn reserve_clears_a_stale_payload() {
    let mut b = CpuBuffer::with_pages(2).unwrap();
    for ts in 1..500 {
        b.write(ts, &[0xff; 40]).unwrap();
    }
    let r = b.reserve(600, 40).unwrap();
    assert!(r.iter().all(|&x| x == 0));
}

#[test]
fn too_big_event_is_refused_and_max_size_fits_a_page() {
    let mut b = CpuBuffer::with_pages(2).unwrap();
    assert_eq!(b.write(0, &[0; BUF_MAX_DATA_SIZE + 1]), Err(WriteError::TooBig));
    b.write(0, &[1; 10]).unwrap();
    b.write(1 << 40, &[7; BUF_MAX_DATA_SIZE]).unwrap();
    let got: StdVec<_> = b.iter().map(|e| e.unwrap().data.len()).collect();
    assert_eq!(got, vec![12, BUF_MAX_DATA_SIZE]);
}

#[test]
fn read_page_hands_out_whole_pages_then_the_partial_tail() {
    let mut b = CpuBuffer::with_pages(4).unwrap();
    for i in 0..150u64 {
        b.write(100 + i, &payload(i, 40)).unwrap();
    }
    let mut page = new_page();
    let mut seen = vec![];
    let mut pages = 0;
    while let Some(r) = b.read_page(&mut page, false) {
        pages += 1;
        let evs: StdVec<_> = PageEvents::new(&page[..]).map(|e| e.unwrap()).collect();
        assert_eq!(evs.len() as u64, r.events);
        seen.extend(evs.iter().map(|e| (e.ts, id(e.data))));
    }
    assert_eq!(pages, 2);
    assert_eq!(seen, (0..150).map(|i| (100 + i, i)).collect::<StdVec<_>>());
    assert_eq!(b.stats().read_events, 150);
    assert_eq!(b.stats().entries, 0);
    // More events after the partial read: relative to the last one read.
    b.write(1000, &payload(500, 40)).unwrap();
    assert!(b.read_page(&mut page, true).is_none(), "the tail page is not full");
    b.read_page(&mut page, false).unwrap();
    let evs: StdVec<_> = PageEvents::new(&page[..]).map(|e| e.unwrap()).collect();
    assert_eq!((evs[0].ts, id(evs[0].data)), (1000, 500));
    assert!(page[16 + 48..].iter().all(|&x| x == 0), "rest of the page zeroed");
}

#[test]
fn dirty_pages_counts_filled_unread_pages_before_the_writer() {
    let mut b = CpuBuffer::with_pages(8).unwrap();
    assert_eq!(b.dirty_pages(), 0);
    // 44-byte payloads make 48-byte events: 85 fill a 4080-byte page.
    for i in 0..85u64 {
        b.write(i, &payload(i, 44)).unwrap();
    }
    assert_eq!(b.dirty_pages(), 0, "the writer is still on its first page");
    for i in 85..(85 * 3 + 1) {
        b.write(i, &payload(i, 44)).unwrap();
    }
    assert_eq!(b.dirty_pages(), 3);
    let mut page = new_page();
    b.read_page(&mut page, true).unwrap();
    assert_eq!(b.dirty_pages(), 2, "a page read is no longer dirty");
    while b.read_page(&mut page, false).is_some() {}
    assert_eq!(b.dirty_pages(), 0);
}

#[test]
fn read_page_flags_and_stores_missed_events() {
    let mut b = CpuBuffer::with_pages(2).unwrap();
    for i in 0..400u64 {
        b.write(i, &payload(i, 40)).unwrap();
    }
    let overrun = b.stats().overrun;
    assert!(overrun > 0);
    let mut page = new_page();
    let r = b.read_page(&mut page, false).unwrap();
    assert_eq!(r.missed, overrun);
    let commit = u64::from_le_bytes(page[8..16].try_into().unwrap());
    assert_ne!(commit & RB_MISSED_EVENTS, 0);
    assert_ne!(commit & RB_MISSED_STORED, 0);
    let size = (commit & !RB_MISSED_MASK) as usize;
    let stored = u64::from_le_bytes(page[16 + size..16 + size + 8].try_into().unwrap());
    assert_eq!(stored, overrun);
    let r2 = b.read_page(&mut page, false).unwrap();
    assert_eq!(r2.missed, 0);
    assert_eq!(u64::from_le_bytes(page[8..16].try_into().unwrap()) & RB_MISSED_MASK, 0);
}

#[test]
fn reset_empties_and_zeroes_counters() {
    let mut b = CpuBuffer::with_pages(2).unwrap();
    for i in 0..300u64 {
        b.write(i, &payload(i, 40)).unwrap();
    }
    b.consume().unwrap();
    b.reset();
    assert_eq!(b.stats(), Stats::default());
    assert!(b.iter().next().is_none());
    b.write(7, &payload(7, 8)).unwrap();
    assert_eq!(drain(&mut b), vec![(7, 7)]);
}

#[test]
fn resize_keeps_newest_data_and_counts_freed_events_as_overrun() {
    let mut b = CpuBuffer::with_pages(4).unwrap();
    let per_page = (BUF_PAGE_SIZE / event_length(40)) as u64;
    let n = 3 * per_page + 5;
    for i in 0..n {
        b.write(i, &payload(i, 40)).unwrap();
    }
    b.consume().unwrap();
    let mut spare = vec![];
    assert_eq!(b.resize(1, &mut spare), Err(ResizeError::TooSmall));
    assert_eq!(b.resize(8, &mut spare), Err(ResizeError::NotEnoughPages));
    spare.extend((0..4).map(|_| new_page()));
    b.resize(8, &mut spare).unwrap();
    assert!(spare.is_empty());
    assert_eq!(b.nr_pages(), 8);
    assert_eq!(ids(&b), (1..n).collect::<StdVec<_>>());
    for i in n..n + 3 * per_page {
        b.write(i, &payload(i, 40)).unwrap();
    }
    assert_eq!(b.stats().overrun, 0, "the new pages took the writes");
    // Shrink to 2: free pages go first, then the oldest data pages.
    b.resize(2, &mut spare).unwrap();
    assert_eq!(spare.len(), 6);
    let s = b.stats();
    assert!(s.overrun > 0);
    assert_eq!(s.entries + s.overrun + s.read_events, s.committed);
    let left = ids(&b);
    assert_eq!(*left.last().unwrap(), n + 3 * per_page - 1);
    assert!(left.windows(2).all(|w| w[1] == w[0] + 1));
}

#[test]
fn page_padding_counts_in_bytes_until_the_reader_leaves_the_page() {
    let mut b = CpuBuffer::with_pages(4).unwrap();
    // 104-byte events: 39 fill 4056 of a page's 4080 data bytes, so the
    // 40th closes the first page with a 24-byte padding event (Linux's
    // rb_reset_tail adds it to entries_bytes) and starts the second.
    for i in 0..40 {
        b.write(i, &payload(i, 100)).unwrap();
    }
    assert_eq!(b.stats().bytes, 40 * 104 + 24);
    for _ in 0..39 {
        b.consume().unwrap();
    }
    assert_eq!(b.stats().bytes, 104 + 24, "the padding stays until its page is left");
    b.consume().unwrap();
    assert_eq!(b.stats().bytes, 0);
    // Under 8 bytes left is no padding event, and no bytes (Linux's
    // RB_EVNT_MIN_SIZE case).
    let mut b = CpuBuffer::with_pages(4).unwrap();
    for i in 0..30 {
        b.write(i, &payload(i, 128)).unwrap();
    }
    // 136-byte events (128 bytes and a long header): 30 fill 4080
    // exactly; the next one pads nothing.
    b.write(30, &payload(30, 128)).unwrap();
    assert_eq!(b.stats().bytes, 31 * 136);
}

#[test]
fn copy_page_walks_every_page_once_in_order() {
    let mut b = CpuBuffer::with_pages(5).unwrap();
    for i in 0..250u64 {
        b.write(2 * i, &payload(i, 50)).unwrap();
    }
    b.consume().unwrap();
    let mut page = new_page();
    let mut after = None;
    let mut got = vec![];
    while let Some(c) = b.copy_page(after, &mut page) {
        after = Some(c.seq);
        got.extend(PageEvents::from_copy(&page, &c).map(|e| id(e.unwrap().data)));
    }
    assert_eq!(got, ids(&b));
    assert_eq!(got.len(), 249);
    // A cursor gives the same events, and peeking does not advance it.
    let c = b.copy_page(None, &mut page).unwrap();
    let mut cur = c.cursor();
    let first = cur.peek(&page).unwrap().unwrap().ts;
    assert_eq!(cur.next_event(&page).unwrap().unwrap().ts, first);
    assert_eq!(id(cur.next_event(&page).unwrap().unwrap().data), 2);
    assert!(try_new_page().is_some());
}

#[test]
fn header_texts_are_linux_texts() {
    assert!(HEADER_PAGE.contains("\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n"));
    assert!(HEADER_EVENT.starts_with("# compressed entry header\n\ttype_len    :    5 bits\n"));
    assert!(HEADER_EVENT.ends_with("\tdata max type_len  == 28\n"));
}

#[derive(Clone, Debug)]
enum Op {
    Write { len: usize, dt: u64 },
    Discard { len: usize },
    Consume(u8),
    ReadPage { full: bool },
    Overwrite(bool),
    Resize(usize),
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => (0usize..300, prop_oneof![0u64..100, 0u64..(1 << 30), Just(1u64 << 33)])
            .prop_map(|(len, dt)| Op::Write { len, dt }),
        1 => (0usize..200).prop_map(|len| Op::Discard { len }),
        3 => any::<u8>().prop_map(Op::Consume),
        1 => any::<bool>().prop_map(|full| Op::ReadPage { full }),
        1 => any::<bool>().prop_map(Op::Overwrite),
        1 => (0usize..6).prop_map(Op::Resize),
        1 => Just(Op::Reset),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever happens, every event the buffer gives back is one that was
    /// written (same time stamp, same payload), in time order, each at
    /// most once, and `entries + overrun + read == committed`.
    #[test]
    fn accounting_and_records_hold_under_any_operations(ops in proptest::collection::vec(op(), 1..400)) {
        let mut b = CpuBuffer::with_pages(2).unwrap();
        let mut written: BTreeMap<u64, StdVec<u8>> = BTreeMap::new();
        let mut ts = 0u64;
        let mut next = 0u64;
        let mut last_read: Option<u64> = None;
        let mut page = new_page();
        let check = |ev: Event, written: &BTreeMap<u64, StdVec<u8>>| -> u64 {
            let n = id(ev.data);
            let want = written.get(&ev.ts).expect("an event that was written");
            assert_eq!(&ev.data[..want.len()], &want[..], "payload of event {n}");
            assert!(ev.data[want.len()..].iter().all(|&x| x == 0));
            ev.ts
        };
        for op in ops {
            match op {
                Op::Write { len, dt } => {
                    ts += dt.max(1);
                    let p = payload(next, len);
                    next += 1;
                    match b.write(ts, &p) {
                        Ok(()) => { written.insert(ts, p); }
                        Err(WriteError::Full) => prop_assert!(!b.overwrite()),
                        Err(WriteError::TooBig) => prop_assert!(false),
                    }
                }
                Op::Discard { len } => {
                    ts += 1;
                    if let Ok(mut r) = b.reserve(ts, len.max(8)) {
                        r[..8].copy_from_slice(&u64::MAX.to_le_bytes());
                    }
                }
                Op::Consume(k) => {
                    for _ in 0..k % 8 {
                        let Some(c) = b.consume() else { break };
                        let t = check(c.event, &written);
                        prop_assert!(last_read.is_none_or(|l| t > l), "time order");
                        last_read = Some(t);
                    }
                }
                Op::ReadPage { full } => {
                    if let Some(r) = b.read_page(&mut page, full) {
                        let mut n = 0;
                        for e in PageEvents::new(&page[..]) {
                            let t = check(e.unwrap(), &written);
                            prop_assert!(last_read.is_none_or(|l| t > l), "time order");
                            last_read = Some(t);
                            n += 1;
                        }
                        prop_assert_eq!(n, r.events);
                    }
                }
                Op::Overwrite(on) => b.set_overwrite(on),
                Op::Resize(n) => {
                    let mut spare: StdVec<Box<Page>> = (0..6).map(|_| new_page()).collect();
                    let r = b.resize(n, &mut spare);
                    prop_assert_eq!(r.is_ok(), n >= MIN_PAGES);
                }
                Op::Reset => {
                    b.reset();
                    prop_assert_eq!(b.stats(), Stats::default());
                }
            }
            let s = b.stats();
            prop_assert_eq!(s.entries + s.overrun + s.read_events, s.committed);
            // The unread events: all written, in time order, after the
            // last one read, as many as `entries`, bytes within the pages.
            let mut prev = last_read;
            let mut count = 0;
            for e in b.iter() {
                let t = check(e.unwrap(), &written);
                prop_assert!(prev.is_none_or(|p| t > p), "iter time order");
                prev = Some(t);
                count += 1;
            }
            prop_assert_eq!(count, s.entries);
            prop_assert!(s.bytes <= (b.nr_pages() * BUF_PAGE_SIZE) as u64);
            // Every unread event has bytes; with none left, only the
            // padding of a page the reader has not stepped off yet.
            prop_assert!(s.bytes != 0 || s.entries == 0);
            if s.entries == 0 {
                prop_assert!(s.bytes < BUF_PAGE_SIZE as u64 * b.nr_pages() as u64);
            }
        }
    }

    /// Arbitrary bytes as a page: decoding never panics or loops.
    #[test]
    fn decoding_arbitrary_pages_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..PAGE_SIZE + 32)) {
        let n = PageEvents::new(&bytes).take(PAGE_SIZE).count();
        prop_assert!(n <= PAGE_SIZE / 4);
    }
}

#[test]
fn larger_subbufs_hold_larger_events_and_hand_out_whole_subbufs() {
    let size = 4 * PAGE_SIZE;
    let mut b = CpuBuffer::new((0..3).map(|_| new_subbuf(size)).collect()).unwrap();
    assert_eq!(b.subbuf_size(), size);
    assert_eq!(b.data_size(), size - BUF_PAGE_HDR_SIZE);
    assert_eq!(b.size_bytes(), 3 * (size - BUF_PAGE_HDR_SIZE));
    // Linux's BUF_MAX_DATA_SIZE for a 16 KiB sub-buffer, and one byte more.
    let max = size - BUF_PAGE_HDR_SIZE - 8;
    assert!(max > BUF_MAX_DATA_SIZE);
    b.write(1, &payload(1, max)).unwrap();
    assert_eq!(b.write(2, &payload(2, max + 1)), Err(WriteError::TooBig));
    b.write(3, &payload(3, 100)).unwrap();
    // A reader with a default page is given one of the buffer's size.
    let mut dst = new_page();
    let r = b.read_page(&mut dst, false).unwrap();
    assert_eq!(dst.len(), size);
    assert_eq!(r.events, 1);
    let got: StdVec<u64> = PageEvents::new(&dst).map(|e| id(e.unwrap().data)).collect();
    assert_eq!(got, [1]);
    let mut copy = new_page();
    let c = b.copy_page(None, &mut copy).unwrap();
    assert_eq!(copy.len(), size);
    let got: StdVec<u64> = PageEvents::from_copy(&copy, &c).map(|e| id(e.unwrap().data)).collect();
    assert_eq!(got, [3]);
}

#[test]
fn subbuf_sizes_are_power_of_two_pages_up_to_128() {
    for (size, ok) in [
        (PAGE_SIZE, true),
        (2 * PAGE_SIZE, true),
        (3 * PAGE_SIZE, false),
        (128 * PAGE_SIZE, true),
        (256 * PAGE_SIZE, false),
        (PAGE_SIZE / 2, false),
        (0, false),
    ] {
        assert_eq!(valid_subbuf_size(size), ok, "{size}");
    }
    let mixed = vec![new_subbuf(PAGE_SIZE), new_subbuf(2 * PAGE_SIZE)];
    assert!(matches!(CpuBuffer::new(mixed), Err(ResizeError::BadSubbufSize)));
    let mut b = CpuBuffer::with_pages(2).unwrap();
    let mut spare = vec![new_subbuf(2 * PAGE_SIZE)];
    assert_eq!(b.resize(3, &mut spare), Err(ResizeError::BadSubbufSize));
    assert_eq!(b.nr_pages(), 2);
}

#[test]
fn header_page_reports_the_data_size_of_the_subbuf() {
    assert_eq!(header_page(PAGE_SIZE), HEADER_PAGE);
    assert!(header_page(2 * PAGE_SIZE).ends_with("\tfield: char data;\toffset:16;\tsize:8176;\tsigned:0;\n"));
}

/// Writes `words` as [`CpuBuffer::write_words_with`] does, through the
/// general reservation, fill and commit.
fn write_words_reserved<const N: usize>(b: &mut CpuBuffer, ts: u64, words: &[u64; N]) -> Result<(), WriteError> {
    let mut r = b.reserve_uninit(ts, 8 * N)?;
    for (c, w) in r.entry_mut().chunks_exact_mut(8).zip(words) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    r.commit();
    Ok(())
}

fn words_of<const N: usize>(n: u64) -> [u64; N] {
    core::array::from_fn(|i| n.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i as u64))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// An event written in one step by `write_words_with` leaves the buffer
    /// exactly as the same event reserved, filled and committed: every page
    /// byte, every count, the same result; across page changes, time
    /// extends, a full ring with and without overwrite, and reads.
    #[test]
    fn words_in_one_step_equal_a_filled_reservation(
        ops in proptest::collection::vec((0u8..4, prop_oneof![0u64..100, 0u64..(1 << 30), Just(1u64 << 33)], any::<u8>()), 1..600),
        overwrite in any::<bool>(),
    ) {
        let mut a = CpuBuffer::with_pages(3).unwrap();
        let mut b = CpuBuffer::with_pages(3).unwrap();
        a.set_overwrite(overwrite);
        b.set_overwrite(overwrite);
        let mut ts = 0u64;
        for (i, (kind, dt, consume)) in ops.into_iter().enumerate() {
            ts += dt;
            let n = i as u64;
            let (ra, rb) = match kind {
                0 => (a.write_words_with(ts, &words_of::<1>(n), put_le32, put_le64), write_words_reserved(&mut b, ts, &words_of::<1>(n))),
                1 => (a.write_words_with(ts, &words_of::<2>(n), put_le32, put_le64), write_words_reserved(&mut b, ts, &words_of::<2>(n))),
                2 => (a.write_words_with(ts, &words_of::<3>(n), put_le32, put_le64), write_words_reserved(&mut b, ts, &words_of::<3>(n))),
                _ => (a.write_words_with(ts, &words_of::<7>(n), put_le32, put_le64), write_words_reserved(&mut b, ts, &words_of::<7>(n))),
            };
            prop_assert_eq!(ra, rb);
            if consume % 5 == 0 {
                prop_assert_eq!(a.consume().map(|c| (c.event.ts, c.event.data.to_vec())), b.consume().map(|c| (c.event.ts, c.event.data.to_vec())));
            }
            prop_assert_eq!(a.stats(), b.stats());
        }
        prop_assert_eq!(a.slots.len(), b.slots.len());
        for i in 0..a.slots.len() {
            prop_assert_eq!(page_bytes(&a, i), page_bytes(&b, i), "page {}", i);
            prop_assert_eq!(a.slots[i].entries, b.slots[i].entries);
        }
        prop_assert_eq!(a.iter().map(|e| e.unwrap().data.to_vec()).collect::<StdVec<_>>(), b.iter().map(|e| e.unwrap().data.to_vec()).collect::<StdVec<_>>());
    }
}
