use super::*;
use crate::hw::topology::Topology;
use crate::linux::mm::page_alloc::fixtures::{LINES, PAGE_ALLOC, SLAB};
use crate::linux::mm::page_alloc::PageAllocConfig;

const TOPO: Topology = Topology { sockets: 1, cores_per_socket: 4, threads_per_core: 1 };

fn env() -> Env<'static> {
    Env { topo: &TOPO, lines: &LINES }
}

fn machine() -> (PageAlloc, Slab, NetCaches) {
    let slab = Slab::new(SLAB, 4, 1);
    let c = NetCaches::lookup(&slab);
    (PageAlloc::new(PageAllocConfig::v4_9(), PAGE_ALLOC, &TOPO, 65_536), slab, c)
}

#[test]
fn socket_buffers_as_mmtests_netperf_sets_them() {
    assert_eq!((sock_min_sndbuf(), sock_min_rcvbuf(), sk_mem_max()), (4608, 2304, 212_992));
    // netperf -s/-S $((SIZE+256)) (docs/references/seeds-001-003-004.md#loopback-allocations).
    assert_eq!(setsockopt_bufs(1024 + 256, 1024 + 256), (4608, 2560));
    assert_eq!(setsockopt_bufs(64 + 256, 64 + 256), (4608, 2304));
    assert_eq!(setsockopt_bufs(16384 + 256, 16384 + 256), (33_280, 33_280));
}

#[test]
fn udp_heads_come_from_the_kmalloc_class_or_the_page_allocator_by_size() {
    let (mut pa, mut slab, c) = machine();
    let mut rx = RecvSock { rcvbuf: 1 << 30, ..Default::default() };
    let mut t = Ps(0);
    for (msg, want) in [
        (64, "kmalloc-512"),
        (256, "kmalloc-1024"),
        (1024, "kmalloc-2048"),
        (3312, "kmalloc-4096"),
        (4096, "kmalloc-8192"),
        (8192, "order 2"),
        (16384, "order 3"),
    ] {
        t = udp_send(&mut slab, &mut pa, c, 0, t, msg, &mut rx, env()).unwrap().done;
        let skb = rx.queue.back().unwrap();
        let got = match skb.head {
            Object::Slab { cache, .. } => slab.caches[cache].name.clone(),
            Object::Large { order, .. } => format!("order {order}"),
        };
        assert_eq!(got, want, "msg {msg}");
        assert!(matches!(skb.skb, Object::Slab { cache, .. } if cache == c.skbuff_head));
    }
    assert_eq!(rx.queue[0].truesize, 512 - 320 + 256 + 320);
    assert_eq!(
        pa.stats.buddy_allocs[3],
        1 + (slab.caches.iter().filter(|k| k.order == 3).map(|k| k.stats.alloc_slab).sum::<u64>())
    );
}

#[test]
fn a_full_receive_queue_drops_and_the_sender_frees() {
    let (mut pa, mut slab, c) = machine();
    let (_, rcvbuf) = setsockopt_bufs(64 + 256, 64 + 256);
    let mut rx = RecvSock { rcvbuf, ..Default::default() };
    let mut t = Ps(0);
    let mut dropped = 0;
    for _ in 0..5 {
        let o = udp_send(&mut slab, &mut pa, c, 0, t, 64, &mut rx, env()).unwrap();
        dropped += o.dropped as u32;
        t = o.done;
    }
    // truesize 768: 0, 768, 1536 are below 2304; at 2304 the next ones drop.
    assert_eq!((rx.queue.len(), dropped, rx.drops), (3, 2, 2));
    while let Some((len, _)) = recv(&mut slab, &mut pa, None, 1, t, &mut rx, env()).unwrap() {
        assert_eq!(len, 64 + UDP_IP_HEADERS);
    }
    assert_eq!(rx.rmem_alloc, 0);
    let k512 = slab.kmalloc_cache(448).unwrap();
    assert_eq!(slab.objects_in_use(k512) + slab.objects_in_use(c.skbuff_head), 0);
    assert_eq!(pa.free_and_cached_pages() + slab.slab_pages(), 65_536);
}

#[test]
fn tcp_payload_goes_to_order3_page_frags_that_the_receiver_releases() {
    // Lock-step: the receiver frees each skb before the next send, so the task's frag page is
    // back to one reference and is reused from offset 0: one order-3 allocation in all.
    let run = |depth: usize| {
        let (mut pa, mut slab, c) = machine();
        let mut frag = PageFrag::default();
        let mut rx = RecvSock { rcvbuf: 1 << 30, ..Default::default() };
        let mut t = Ps(0);
        for _ in 0..100 {
            t = tcp_send(&mut slab, &mut pa, c, &mut frag, 0, t, 16384, &mut rx, env()).unwrap().done;
            while rx.queue.len() >= depth {
                t = recv(&mut slab, &mut pa, Some(&mut frag), 1, t, &mut rx, env()).unwrap().unwrap().1.done;
            }
        }
        while let Some((_, o)) = recv(&mut slab, &mut pa, Some(&mut frag), 1, t, &mut rx, env()).unwrap() {
            t = o.done;
        }
        assert_eq!(frag.pages_alive(), 1, "only the task's own page is left");
        // Order-3 blocks for frags: all of them minus the kmalloc-2048 heads' order-3 slabs.
        let slabs: u64 = slab.caches.iter().filter(|k| k.order == 3).map(|k| k.stats.alloc_slab).sum();
        pa.stats.buddy_allocs[3] - slabs
    };
    assert_eq!(run(1), 1);
    // A 20-deep queue keeps pages referenced: a new 32 KiB page per ~32 KiB of frag payload.
    let per_send = 16384 - tcp_linear_room();
    let deep = run(20);
    assert!(deep >= 100 * per_send / 32768 && deep <= 100 * per_send / 32768 + 2, "{deep}");
}

#[test]
fn a_paged_tcp_skb_is_its_header_head_plus_the_payload_and_a_linear_one_a_2k_head() {
    // v5.10+: MAX_TCP_HEADER's head (a kmalloc-1024 object here) and every byte in a frag;
    // v4.9: the first 1408 bytes in a kmalloc-2048 head, nothing charged for them beyond it.
    let (mut pa, mut slab, c) = machine();
    let mut frag = PageFrag::default();
    let (paged, _) = tcp_alloc(&mut slab, &mut pa, c, &mut frag, 0, Ps(0), 64, false, env()).unwrap();
    let (linear, _) = tcp_alloc(&mut slab, &mut pa, c, &mut frag, 0, Ps(0), 64, true, env()).unwrap();
    assert_eq!((paged.truesize, paged.frags.len(), paged.room), (skb_truesize(1024 - 320) + 64, 1, 0));
    assert_eq!((linear.truesize, linear.frags.len()), (skb_truesize(2048 - 320), 0));
    // Both fit mmtests' 2304-byte receive buffer once; only the paged one leaves room after it.
    assert!(paged.truesize < sock_min_rcvbuf() && linear.truesize >= sock_min_rcvbuf());
}

#[test]
fn a_bounded_tcp_read_takes_part_of_a_segment_and_crosses_into_the_next() {
    let (mut pa, mut slab, c) = machine();
    let mut frag = PageFrag::default();
    let mut rx = RecvSock { rcvbuf: 1 << 30, ..Default::default() };
    let mut t = Ps(0);
    for len in [576, 100] {
        let (skb, o) = tcp_alloc(&mut slab, &mut pa, c, &mut frag, 0, t, len, false, env()).unwrap();
        t = deliver(&mut slab, &mut pa, 0, o.done, skb, &mut rx, false, env()).unwrap().done;
    }
    let queued = rx.rmem_alloc;
    let first = rx.queue[0].truesize;
    // Nine 64-byte reads use up the first segment; only the ninth frees it.
    for i in 1..=9 {
        let (copied, freed, o) =
            tcp_recv_upto(&mut slab, &mut pa, &mut frag, 1, t, &mut rx, 64, env()).unwrap().unwrap();
        t = o.done;
        assert_eq!(copied, 64);
        assert_eq!(freed, if i == 9 { first } else { 0 }, "read {i}");
    }
    assert_eq!((rx.queue.len(), rx.rmem_alloc, rx.front_read), (1, queued - first, 0));
    // A read larger than what is queued takes the rest and stops at the empty queue.
    let (copied, _, o) =
        tcp_recv_upto(&mut slab, &mut pa, &mut frag, 1, t, &mut rx, 8192, env()).unwrap().unwrap();
    assert_eq!((copied, rx.rmem_alloc, rx.queue.len()), (100, 0, 0));
    assert!(tcp_recv_upto(&mut slab, &mut pa, &mut frag, 1, o.done, &mut rx, 64, env()).unwrap().is_none());
    // And one crossing a boundary: 50 left of a segment, then 14 of the next.
    for len in [100, 100] {
        let (skb, o) = tcp_alloc(&mut slab, &mut pa, c, &mut frag, 0, t, len, false, env()).unwrap();
        t = deliver(&mut slab, &mut pa, 0, o.done, skb, &mut rx, false, env()).unwrap().done;
    }
    tcp_recv_upto(&mut slab, &mut pa, &mut frag, 1, t, &mut rx, 50, env()).unwrap().unwrap();
    let (copied, _, _) =
        tcp_recv_upto(&mut slab, &mut pa, &mut frag, 1, t, &mut rx, 64, env()).unwrap().unwrap();
    assert_eq!((copied, rx.queue.len(), rx.front_read), (64, 1, 14));
}
