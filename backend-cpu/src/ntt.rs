//! NTTs over one column, in place, with no bit-reversal pass where the
//! caller can avoid it: radix-2 butterfly layers, two at a time as radix-4
//! steps where the vector kernels run them (w_4 = ±2^48 costs shifts, not
//! a multiplication).
//!
//! Forward and inverse transforms share two kernels: decimation in
//! frequency (natural input, bit-reversed output) and decimation in time
//! (bit-reversed input, natural output). Layers whose butterfly blocks fit
//! in a chunk (`chunk_size`) run chunk by chunk, so the small-stride
//! layers of a large column stay in cache; the large-stride layers run up
//! to `FUSE` at a time over L1-sized tiles (`fused_layers`), in parallel
//! across tiles, reading their twiddles from tables laid out in the tiles'
//! order. The layers with half-blocks below 8 run in registers, as 8-point
//! transforms across lanes where they can (`simd::small_layers`).

use backend_api::field::{F, P};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Elements per cache-resident chunk (32 KiB), or up to MAX_CHUNK where
/// that saves a fused pass (`chunk_size`).
const CHUNK: usize = 1 << 12;
const MAX_CHUNK: usize = 1 << 16;
/// Columns at least this long use threads inside the transform.
pub(crate) const PAR_MIN: usize = 1 << 14;

/// The twiddles of both directions, built on first use: those of the
/// layers that run inside a chunk (half-blocks up to MAX_CHUNK / 2) in one
/// table whose entry `h + k` is w_(2h)^k for k < h; and each fused pass's,
/// in the order its tiles read them (see `pass_table`).
#[derive(Default)]
pub(crate) struct Twiddles {
    layers: [OnceLock<Vec<F>>; 2],
    cubes: [OnceLock<Vec<F>>; 2],
    passes: Mutex<HashMap<PassKey, PassSlot>>,
}

/// A fused pass: (inverse, h_low, r).
type PassKey = (bool, usize, u32);
/// A fused pass's table, once built.
type PassSlot = Arc<OnceLock<Arc<Vec<F>>>>;

/// One direction's twiddles. As a slice it is the chunk layers' table.
pub(crate) struct Tables<'a> {
    inverse: bool,
    owner: &'a Twiddles,
    /// The fourth root of unity this direction's radix-4 steps use.
    root4: F,
}

impl std::ops::Deref for Tables<'_> {
    type Target = [F];
    fn deref(&self) -> &[F] {
        self.owner.layers[self.inverse as usize]
            .get_or_init(|| build_twiddles(MAX_CHUNK.trailing_zeros(), self.inverse))
    }
}

impl Tables<'_> {
    /// The radix-4 steps' third twiddles: entry `h + k` is w_(4h)^(3k) for
    /// k < h, h up to MAX_CHUNK / 4 (see `layer_pair`).
    fn cubes(&self) -> &[F] {
        self.owner.cubes[self.inverse as usize]
            .get_or_init(|| build_cubes(MAX_CHUNK.trailing_zeros() - 1, self.inverse))
    }

    /// Whether this direction's fourth root of unity w_4 is -2^48 (it is
    /// 2^48 or -2^48: the inverse of one is the other).
    fn root4_negative(&self) -> bool {
        self.root4 != F::new(1 << 48)
    }

    /// The fused pass over half-blocks h_low .. 2^(r-1) h_low, built once:
    /// the columns' tasks that ask for it at the same time wait for one
    /// build rather than each making a copy.
    fn pass(&self, h_low: usize, r: u32) -> Arc<Vec<F>> {
        let slot = {
            let mut passes = self.owner.passes.lock().unwrap_or_else(|e| e.into_inner());
            passes.entry((self.inverse, h_low, r)).or_default().clone()
        };
        slot.get_or_init(|| Arc::new(pass_table(h_low, r, self.inverse))).clone()
    }
}

impl Twiddles {
    pub(crate) fn get(&self, inverse: bool) -> Tables<'_> {
        let root4 = layer_root(2, inverse);
        assert!(root4 == F::new(1 << 48) || root4 == -F::new(1 << 48), "w_4 is +-2^48 in Goldilocks");
        Tables { inverse, owner: self, root4 }
    }
}

/// w_(2h), or its inverse.
fn layer_root(h: usize, inverse: bool) -> F {
    let w = F::two_adic_root(h.trailing_zeros() + 1);
    if inverse {
        w.pow(2 * h as u64 - 1)
    } else {
        w
    }
}

/// A fused pass's steps in DIT order: layers (s, s + 1) for even s as one
/// radix-4 step, the last layer alone when r is odd. Step s's twiddle runs
/// start at run 2^s - 1 of a tile's table either way.
fn steps(r: u32) -> impl DoubleEndedIterator<Item = (u32, bool)> {
    (0..r).step_by(2).map(move |s| (s, s + 1 < r))
}

/// A fused pass's twiddles in tile order: for each tile offset i0, for
/// each step (see `steps`; half-block hh = h_low 2^s), for each of its 2^s
/// distinct groups m, with k = m h_low + i0 + t for t < TILE: a radix-4
/// step's runs u = w_(4hh)^k, u^2 and u^3 (see `simd::layer_pair`), a lone
/// layer's run w_(2hh)^k. A task then reads one contiguous run instead of
/// 2^r - 1 runs spread over layer tables larger than the caches, which the
/// prefetchers do not follow.
///
/// Built on scoped threads, not rayon's: it runs inside `Tables::pass`'s
/// one-time initialisation, and a rayon worker waiting there could steal
/// another column's task that asks for the same table, re-entering it.
fn pass_table(h_low: usize, r: u32, inverse: bool) -> Vec<F> {
    let per_tile = ((1usize << r) - 1) * TILE;
    // Each run's root: per step, per group, the radix-4 step's three or
    // the lone layer's one.
    let step_roots: Vec<(u32, Vec<F>)> = steps(r)
        .map(|(s, pair)| {
            let hh = h_low << s;
            let roots = match pair {
                true => vec![layer_root(2 * hh, inverse), layer_root(hh, inverse), layer_root(2 * hh, inverse).pow(3)],
                false => vec![layer_root(hh, inverse)],
            };
            (s, roots)
        })
        .collect();
    let tiles = h_low / TILE;
    let mut out = vec![F::ZERO; tiles * per_tile];
    let fill = |first: usize, dst: &mut [F]| {
        for (i, tile) in dst.chunks_mut(per_tile).enumerate() {
            let i0 = (first + i) * TILE;
            let runs = step_roots.iter().flat_map(|(s, roots)| {
                (0..1usize << s).flat_map(move |m| roots.iter().map(move |&root| (root, m * h_low + i0)))
            });
            for (run, (root, k)) in tile.chunks_mut(TILE).zip(runs) {
                let mut acc = root.pow(k as u64);
                for v in run {
                    *v = acc;
                    acc *= root;
                }
            }
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(tiles.div_ceil(64));
    let per_thread = tiles.div_ceil(threads.max(1));
    std::thread::scope(|scope| {
        for (i, dst) in out.chunks_mut(per_thread * per_tile).enumerate() {
            let fill = &fill;
            scope.spawn(move || fill(i * per_thread, dst));
        }
    });
    out
}

/// The layer table for transforms of up to 2^log_n: entry `h + k` is
/// w_(2h)^k (or its inverse) for k < h.
fn build_twiddles(log_n: u32, inverse: bool) -> Vec<F> {
    powers_by_half_block(log_n, |h| layer_root(h, inverse))
}

/// The cubes table for radix-4 steps up to low half-block 2^(log_n - 1):
/// entry `h + k` is w_(4h)^(3k) (or its inverse) for k < h.
fn build_cubes(log_n: u32, inverse: bool) -> Vec<F> {
    powers_by_half_block(log_n, |h| layer_root(2 * h, inverse).pow(3))
}

/// A table of 2^log_n entries whose entry `h + k` is root(h)^k for each
/// half-block h < 2^log_n and k < h.
fn powers_by_half_block(log_n: u32, root: impl Fn(usize) -> F) -> Vec<F> {
    let mut t = vec![F::ZERO; 1usize << log_n];
    for log_h in 0..log_n {
        let h = 1usize << log_h;
        let w = root(h);
        let mut acc = F::ONE;
        for v in &mut t[h..2 * h] {
            *v = acc;
            acc *= w;
        }
    }
    t
}

/// 2^-log as a field element.
pub(crate) fn inv_pow2(log: u32) -> F {
    F::new(P.div_ceil(2)).pow(log as u64)
}

#[inline]
pub(crate) fn bitrev(i: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        i.reverse_bits() >> (usize::BITS - bits)
    }
}

#[cfg(test)]
pub(crate) fn bit_reverse(a: &mut [F]) {
    let n = a.len();
    if n <= 2 {
        return;
    }
    let bits = n.trailing_zeros();
    for i in 0..n {
        let j = bitrev(i, bits);
        if i < j {
            a.swap(i, j);
        }
    }
}

#[inline(always)]
fn butterflies_dif(lo: &mut [F], hi: &mut [F], tw: &[F], simd: bool) {
    let done = crate::simd::dif(lo, hi, tw, simd);
    let (lo, hi, tw) = (&mut lo[done..], &mut hi[done..], &tw[done..]);
    for ((a, b), &w) in lo.iter_mut().zip(hi.iter_mut()).zip(tw) {
        let (x, y) = (*a, *b);
        *a = x + y;
        *b = (x - y) * w;
    }
}

/// Scalar DIT butterflies (the vector ones run whole layers: `simd::layer`).
fn butterflies_dit(lo: &mut [F], hi: &mut [F], tw: &[F]) {
    for ((a, b), &w) in lo.iter_mut().zip(hi.iter_mut()).zip(tw) {
        let (x, y) = (*a, *b * w);
        *a = x + y;
        *b = x - y;
    }
}

/// The layers with half-blocks below 8 (DIF: from 2^(from-1) down to 1;
/// DIT: from 2^from up to 4) in registers when the vector path is on and
/// `a` is whole 16-element groups; returns the count done (all or 0).
fn small_layers(a: &mut [F], tw: &[F], from: u32, dif: bool, simd: bool) -> usize {
    if !simd || a.len() < 16 || !a.len().is_multiple_of(16) {
        return 0;
    }
    crate::simd::small_layers(a, tw, from, dif, true)
}

/// One layer of butterflies with half-block `h` over all of `a` (a
/// cache-resident chunk).
fn layer(a: &mut [F], h: usize, tw: &[F], dif: bool) {
    let t = &tw[h..2 * h];
    if crate::simd::layer(a, h, t, dif) {
        return;
    }
    for block in a.chunks_mut(2 * h) {
        let (lo, hi) = block.split_at_mut(h);
        match dif {
            true => butterflies_dif(lo, hi, t, false),
            false => butterflies_dit(lo, hi, t),
        }
    }
}

/// A radix-4 step in scalar code, as `simd::layer_pair`'s: the values at
/// i, i + h, i + 2h, i + 3h; `u` holds w_4h^i, its square and cube; `w4`
/// is the fourth root of unity.
fn quad(x: [F; 4], u: [F; 3], w4: F, dif: bool) -> [F; 4] {
    if dif {
        let (a, c, b, d) = (x[0] + x[2], x[0] - x[2], x[1] + x[3], (x[1] - x[3]) * w4);
        [a + b, (a - b) * u[1], (c + d) * u[0], (c - d) * u[2]]
    } else {
        let (y1, y2, y3) = (x[1] * u[1], x[2] * u[0], x[3] * u[2]);
        let (a, b, c, d) = (x[0] + y1, x[0] - y1, y2 + y3, (y2 - y3) * w4);
        [a + c, b + d, a - c, b - d]
    }
}

/// Elements of one row of a fused tile (512 bytes).
const TILE: usize = 64;
/// Large-stride layers fused into one pass: a tile is 2^FUSE rows of
/// TILE elements (16 KiB), so it stays in L1 across the fused layers.
const FUSE: u32 = 5;

/// A column's base pointer, shared by tasks that touch disjoint elements.
struct SharedMut(*mut F);
// SAFETY: only used by `fused_layers`, `dit_spread` and `bitrev_copy`,
// whose tasks touch disjoint elements.
unsafe impl Sync for SharedMut {}

impl SharedMut {
    fn get(&self) -> *mut F {
        self.0
    }
}

/// `r` consecutive layers with half-blocks h_low, 2 h_low, .. 2^(r-1) h_low
/// (DIT: smallest first; DIF: largest first), tile by tile. Within a block
/// of 2^r h_low elements, the elements i + j h_low (j < 2^r) only meet each
/// other in these layers, so each tile of TILE consecutive i runs through
/// all r layers in an L1 buffer, its first layer reading the rows from
/// memory and its last writing them back: one pass over memory instead of
/// r, with no copy of its own. Its twiddles are one contiguous run of the
/// pass's table. With `src`, the tiles are gathered from it (as long as
/// `a`) instead: a copy into `a` that costs no pass of its own. Needs h_low
/// a multiple of TILE.
fn fused_layers(a: &mut [F], src: Option<&[F]>, h_low: usize, r: u32, tw: &Tables, dif: bool, par: bool) {
    let rows = 1usize << r;
    let pass = tw.pass(h_low, r);
    let per_tile = (rows - 1) * TILE;
    let block = rows * h_low;
    assert!(r <= FUSE && h_low.is_multiple_of(TILE) && a.len().is_multiple_of(block));
    assert!(src.is_none_or(|s| s.len() == a.len()));
    let tiles = h_low / TILE;
    let tasks = a.len() / block * tiles;
    let (neg, w4) = (tw.root4_negative(), tw.root4);
    let base_ptr = SharedMut(a.as_mut_ptr());
    let run = |t: usize| {
        let (b, i0) = (t / tiles, (t % tiles) * TILE);
        let base = b * block + i0;
        let mut space = std::mem::MaybeUninit::<[F; (1 << FUSE) * TILE]>::uninit();
        let bp = space.as_mut_ptr().cast::<F>();
        let ptr = base_ptr.get();
        let read = src.map_or(ptr.cast_const(), <[F]>::as_ptr);
        let twiddles = &pass[(t % tiles) * per_tile..][..per_tile];
        // SAFETY: task t alone reads and writes elements base + j h_low +
        // (0..TILE) for j < rows (tiles partition each block's offsets),
        // all inside `a` (and `src`, as long, a different slice):
        // base + (rows - 1) h_low + TILE <= (b + 1) block. The buffer holds
        // (1 << FUSE) * TILE >= rows * TILE elements.
        let done = unsafe {
            let mem = crate::simd::Rows { src: read.add(base), dst: ptr.add(base), stride: h_low };
            crate::simd::tile(mem, bp, TILE, r, twiddles, dif, neg)
        };
        if done {
            return;
        }
        // Without the vector kernel: gather the tile, run the same steps in
        // scalar code, scatter it back.
        // SAFETY: as above; the gather writes all of the buffer's first
        // rows * TILE elements before the slice over them is made.
        let buf = unsafe {
            for j in 0..rows {
                std::ptr::copy_nonoverlapping(read.add(base + j * h_low), bp.add(j * TILE), TILE);
            }
            std::slice::from_raw_parts_mut(bp, rows * TILE)
        };
        let order: Vec<(u32, bool)> = if dif { steps(r).rev().collect() } else { steps(r).collect() };
        for (s, pair) in order {
            let half = 1usize << s;
            let first = half - 1;
            if pair {
                for j in (0..rows).filter(|j| j & (3 * half) == 0) {
                    let at = (first + 3 * (j & (half - 1))) * TILE;
                    // Rows j + q half, q < 4, and the three runs, as slices
                    // of exactly TILE so the loop below needs no bounds checks.
                    let (_, tail) = buf.split_at_mut(j * TILE);
                    let (r0, tail) = tail.split_at_mut(half * TILE);
                    let (r1, tail) = tail.split_at_mut(half * TILE);
                    let (r2, r3) = tail.split_at_mut(half * TILE);
                    let (r0, r1, r2, r3) = (&mut r0[..TILE], &mut r1[..TILE], &mut r2[..TILE], &mut r3[..TILE]);
                    let u = &twiddles[at..at + 3 * TILE];
                    let (u1, u2, u3) = (&u[..TILE], &u[TILE..2 * TILE], &u[2 * TILE..]);
                    for t in 0..TILE {
                        let y = quad([r0[t], r1[t], r2[t], r3[t]], [u1[t], u2[t], u3[t]], w4, dif);
                        (r0[t], r1[t], r2[t], r3[t]) = (y[0], y[1], y[2], y[3]);
                    }
                }
                continue;
            }
            for j in (0..rows).filter(|j| j & half == 0) {
                let (lo, hi) = buf.split_at_mut((j + half) * TILE);
                let (lo, hi) = (&mut lo[j * TILE..(j + 1) * TILE], &mut hi[..TILE]);
                let at = (first + (j & (half - 1))) * TILE;
                let w = &twiddles[at..at + TILE];
                if dif {
                    butterflies_dif(lo, hi, w, false);
                } else {
                    butterflies_dit(lo, hi, w);
                }
            }
        }
        // SAFETY: as above.
        unsafe {
            for (j, row) in buf.chunks(TILE).enumerate() {
                std::ptr::copy_nonoverlapping(row.as_ptr(), ptr.add(base + j * h_low), TILE);
            }
        }
    };
    if par {
        (0..tasks).into_par_iter().for_each(run);
    } else {
        (0..tasks).for_each(run);
    }
}

/// Fused DIF passes from half-block h down while a block (2h) is larger
/// than a chunk, the first reading `src` when given (see `fused_layers`;
/// with no pass to run, `src` is copied); returns the half-block left for
/// the chunks.
fn fused_down(a: &mut [F], mut src: Option<&[F]>, mut h: usize, tw: &Tables, par: bool) -> usize {
    let chunk = chunk_size(a.len());
    while 2 * h > chunk {
        // Layers h down to the chunk's, up to FUSE of them per pass.
        let r = FUSE.min((2 * h / chunk).trailing_zeros());
        let h_low = h >> (r - 1);
        fused_layers(a, src.take(), h_low, r, tw, true, par);
        h = h_low / 2;
    }
    if let Some(src) = src {
        a.copy_from_slice(src);
    }
    h
}

/// Elements per chunk for a column of n: the smallest power of two from
/// CHUNK to MAX_CHUNK (512 KiB, still in L2) that leaves the fewest fused
/// passes above it. Each pass reads and writes the whole column, which
/// bounds the large transforms on hosts whose threads share too little
/// memory bandwidth; a pass for one lone layer is the worst of them.
fn chunk_size(n: usize) -> usize {
    let log_n = n.max(1).trailing_zeros();
    let passes = |c: u32| log_n.saturating_sub(c).div_ceil(FUSE);
    let logs = CHUNK.trailing_zeros()..=MAX_CHUNK.trailing_zeros();
    let best = logs.min_by_key(|&c| (passes(c), c)).expect("a chunk size");
    (1usize << best).min(n)
}

/// Fused DIT passes from half-block h up to the top of `a`.
fn fused_up(a: &mut [F], mut h: usize, tw: &Tables, par: bool) {
    while h < a.len() {
        let r = FUSE.min((a.len() / h).trailing_zeros());
        fused_layers(a, None, h, r, tw, false, par);
        h <<= r;
    }
}

/// Layers with half-blocks h and 2h over one chunk as radix-4 steps,
/// when the vector kernel takes them; false (nothing done) otherwise.
fn layer_pair(c: &mut [F], h: usize, tw: &Tables, dif: bool) -> bool {
    let pows = [&tw[2 * h..3 * h], &tw[h..2 * h], &tw.cubes()[h..2 * h]];
    crate::simd::layer_pair(c, h, pows, dif, tw.root4_negative())
}

/// The DIF layers h down to 1 over one chunk (at most MAX_CHUNK elements).
fn chunk_dif(c: &mut [F], h: usize, tw: &Tables, simd: bool) {
    let mut hh = h;
    // Two layers a pass (2hh', hh') while both have half-blocks of 8 or more.
    while hh >= 16 && layer_pair(c, hh / 2, tw, true) {
        hh /= 4;
    }
    while hh >= 8 {
        layer(c, hh, tw, true);
        hh /= 2;
    }
    // The last layers (half-blocks 4, 2, 1) in registers, 16 elements at
    // a time; the scalar loops cover what is left.
    let done = if hh >= 1 { small_layers(c, tw, hh.trailing_zeros() + 1, true, simd) } else { 0 };
    if done < c.len() {
        while hh >= 1 {
            layer(c, hh, tw, true);
            hh /= 2;
        }
    }
}

/// The DIT layers from half-block h up to the top of one chunk.
fn chunk_dit(c: &mut [F], h: usize, tw: &Tables, simd: bool) {
    let mut hh = h;
    // Half-blocks below 8 in registers, 16 elements at a time.
    if hh < 8 && small_layers(c, tw, hh.trailing_zeros(), false, simd) == c.len() {
        hh = 8;
    }
    while 4 * hh <= c.len() && hh >= 8 && layer_pair(c, hh, tw, false) {
        hh *= 4;
    }
    while 2 * hh <= c.len() {
        layer(c, hh, tw, false);
        hh *= 2;
    }
}

/// Decimation in frequency: natural order in, bit-reversed order out, in
/// place, or out of `src` (as long as `a`) into `a` when given. With the forward table this
/// is the NTT, with the inverse table n times the inverse NTT.
pub(crate) fn dif(a: &mut [F], src: Option<&[F]>, tw: &Tables, par: bool) {
    let n = a.len();
    if n <= 1 {
        if let Some(src) = src {
            a.copy_from_slice(src);
        }
        return;
    }
    let h = fused_down(a, src, n / 2, tw, par);
    let simd = crate::simd::available();
    let chunk = |c: &mut [F]| chunk_dif(c, h, tw, simd);
    if par && n > 2 * h {
        a.par_chunks_mut(2 * h).for_each(chunk);
    } else {
        a.chunks_mut(2 * h).for_each(chunk);
    }
}

/// Decimation in time: bit-reversed order in, natural order out. The
/// input is `a`'s first a.len() / b values, each times its `scale` entry
/// when one is given, and each standing for b repeats: a zero-padded input
/// in bit-reversed order, whose first log b layers would only repeat each
/// value. Each chunk spreads its own values as it starts, so neither the
/// spread nor the scaling costs a pass over memory of its own.
pub(crate) fn dit_spread(a: &mut [F], b: usize, scale: Option<&[F]>, tw: &Tables, par: bool) {
    let n = a.len();
    assert!(b.is_power_of_two() && n.is_multiple_of(b) && scale.is_none_or(|s| s.len() >= n / b));
    if n == 0 {
        return;
    }
    let size = chunk_size(n);
    let simd = crate::simd::available();
    let base = SharedMut(a.as_mut_ptr());
    let chunk = |q: usize| {
        // SAFETY: a task owns chunk q alone; its values (see
        // `spread_chunk`) are in chunk q / b, which `in_levels` writes only
        // once every task reading it is done.
        let c = unsafe {
            let ptr = base.get();
            if b > 1 || scale.is_some() {
                spread_chunk(ptr, q * size, size, b, scale);
            }
            std::slice::from_raw_parts_mut(ptr.add(q * size), size)
        };
        chunk_dit(c, b, tw, simd);
    };
    in_levels(n / size, b, par && n > size, chunk);
    fused_up(a, b.max(size), tw, par);
}

/// The factor `bitrev_copy` multiplies each value it moves by.
#[derive(Clone, Copy)]
pub(crate) enum Scale<'a> {
    One,
    By(F),
    /// `table[j]` for the value written to `dst[j]` (e.g. `bitrev_powers`).
    Table(&'a [F]),
}

/// `dst[j] = src[bitrev(j)] * scale_j`: the bit-reversal permutation fused
/// with the copy out of the input and its scaling (the 1/n of the inverse,
/// or a coset's powers), one pass instead of a copy, a swap pass and a
/// scaling pass. A column of 2^(2K + m) elements is cut as j = (a, b, c)
/// with a and c of K bits: bitrev(j) = (rev c, rev b, rev a), so for each
/// middle b the 2^K x 2^K elements (rev c, rev b, *) are read as 2^K runs
/// of 2^K, transposed in L1 and written as 2^K runs (a, b, *). Every read
/// and write is a whole run of cache lines, where an element-wise gather
/// misses the cache on nearly every read once the column outgrows it.
pub(crate) fn bitrev_copy(dst: &mut [F], src: &[F], scale: Scale) {
    const K: u32 = 5;
    const T: usize = 1 << K;
    let n = dst.len();
    assert_eq!(n, src.len());
    if let Scale::Table(t) = scale {
        assert!(t.len() >= n, "a scale for every position");
    }
    let bits = n.trailing_zeros();
    if bits < 2 * K + 1 {
        dst.iter_mut().enumerate().for_each(|(j, v)| *v = src[bitrev(j, bits)]);
        match scale {
            Scale::One => {}
            Scale::By(s) => crate::simd::scale(dst, s),
            Scale::Table(t) => crate::simd::mul_by(dst, &t[..n]),
        }
        return;
    }
    let m = bits - 2 * K;
    let rev: [usize; T] = std::array::from_fn(|i| bitrev(i, K));
    let out = SharedMut(dst.as_mut_ptr());
    let run = |b: usize| {
        let rb = bitrev(b, m);
        let mut tile = [F::ZERO; T * T];
        for rc in 0..T {
            let run = &src[(rc << (m + K)) + (rb << K)..][..T];
            for (ra, &v) in run.iter().enumerate() {
                tile[rev[ra] * T + rev[rc]] = v;
            }
        }
        if let Scale::By(s) = scale {
            crate::simd::scale(&mut tile, s);
        }
        let mut scaled = [F::ZERO; T];
        for (a, row) in tile.chunks(T).enumerate() {
            let at = (a << (m + K)) + (b << K);
            let row = match scale {
                Scale::Table(t) => {
                    crate::simd::binop::<{ crate::simd::MUL }>(&mut scaled, Some(row), Some(&t[at..at + T]), F::ZERO);
                    &scaled[..]
                }
                _ => row,
            };
            // SAFETY: task b alone writes dst[(a, b, 0..T)] for every a;
            // at + T <= n.
            unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), out.get().add(at), T) };
        }
    };
    if n >= PAR_MIN {
        (0..1usize << m).into_par_iter().with_min_len(64).for_each(run);
    } else {
        (0..1usize << m).for_each(run);
    }
}

/// Coefficients (natural) in `src` to evaluations on the subgroup
/// (natural) in `dst`.
pub(crate) fn ntt_column(dst: &mut [F], src: &[F], tw_fwd: &Tables) {
    bitrev_copy(dst, src, Scale::One);
    dit_spread(dst, 1, None, tw_fwd, dst.len() >= PAR_MIN);
}

/// Evaluations on the subgroup (natural) in `src` to coefficients
/// (natural) in `dst`: the same DIT pass with the inverse table, the 1/n
/// folded into the permuting copy.
pub(crate) fn intt_column(dst: &mut [F], src: &[F], tw_inv: &Tables) {
    let n = dst.len();
    bitrev_copy(dst, src, Scale::By(inv_pow2(n.trailing_zeros())));
    dit_spread(dst, 1, None, tw_inv, n >= PAR_MIN);
}

/// Coefficients (natural) in `src` to evaluations (natural) on the coset
/// of `dst.len()` points whose table `scale` is `bitrev_powers(shift, 1,
/// n)` (`None`: shift one), the coefficients zero-padded past n. The
/// scaling rides on the permuting copy.
pub(crate) fn coset_column(dst: &mut [F], src: &[F], scale: Option<&[F]>, tw_fwd: &Tables) {
    let n = src.len();
    bitrev_copy(&mut dst[..n], src, scale.map_or(Scale::One, Scale::Table));
    bitrev_coeffs_to_evals(dst, n, None, tw_fwd);
}

/// `scale[p]` for the coefficient at bit-reversed position p: the table
/// `factor * shift^bitrev(p)` over n positions.
pub(crate) fn bitrev_powers(shift: F, factor: F, n: usize) -> Vec<F> {
    let pows = powers(shift, factor, n);
    let mut out = vec![F::ZERO; n];
    bitrev_copy(&mut out, &pows, Scale::One);
    out
}

/// `factor * shift^i` for i < n, natural order.
pub(crate) fn powers(shift: F, factor: F, n: usize) -> Vec<F> {
    const RUN: usize = 1 << 12;
    let mut pows = vec![F::ZERO; n];
    let fill = |(i, run): (usize, &mut [F])| {
        let mut acc = factor * shift.pow((i * RUN) as u64);
        for v in run {
            *v = acc;
            acc *= shift;
        }
    };
    if n >= PAR_MIN {
        pows.par_chunks_mut(RUN).enumerate().for_each(fill);
    } else {
        pows.chunks_mut(RUN).enumerate().for_each(fill);
    }
    pows
}

/// Finishes a coset evaluation: `dst[..n]` holds n coefficients in
/// bit-reversed order; they are scaled by `scale` (see `bitrev_powers`;
/// `None` when they come scaled), spread over `dst` (zero padding to
/// dst.len() in bit-reversed order is each value repeated blowup times
/// after the trivial layers), and transformed to natural-order evaluations.
pub(crate) fn bitrev_coeffs_to_evals(dst: &mut [F], n: usize, scale: Option<&[F]>, tw_fwd: &Tables) {
    let big = dst.len();
    dit_spread(dst, big / n, scale, tw_fwd, big >= PAR_MIN);
}

/// Writes positions start..start + size of a spread: position p holds
/// the value at p / b times `scale[p / b]`. The values (inside the chunk
/// for the first one) are read and scaled, eight lanes at a time, before
/// the first write.
///
/// # Safety
/// `ptr` is valid for reads and writes up to start + size, and no other
/// thread touches the chunk or its values meanwhile; b divides start and
/// size is at most MAX_CHUNK.
unsafe fn spread_chunk(ptr: *mut F, start: usize, size: usize, b: usize, scale: Option<&[F]>) {
    let (first, count) = (start / b, (size / b).max(1));
    if b == 1 {
        // The chunk's own values, scaled in place.
        if let Some(s) = scale {
            crate::simd::mul_by(std::slice::from_raw_parts_mut(ptr.add(start), size), &s[first..first + count]);
        }
        return;
    }
    // A copy, since the values may lie inside the chunk being written; on
    // the heap, as a chunk's half (up to 256 KiB) is too large a frame.
    let mut vals = std::slice::from_raw_parts(ptr.add(first), count).to_vec();
    if let Some(s) = scale {
        crate::simd::mul_by(&mut vals, &s[first..first + count]);
    }
    let c = std::slice::from_raw_parts_mut(ptr.add(start), size);
    if b > size {
        c.fill(vals[0]);
    } else if !crate::simd::repeat(c, &vals, b) {
        c.chunks_mut(b).zip(vals.iter()).for_each(|(o, &v)| o.fill(v));
    }
}

/// Runs `chunk(q)` for q < chunks, where chunk q reads its values from
/// chunk q / b and writes its own: with b > 1, in levels from the top
/// ([max(hi / b, 1), hi), then below), each level in parallel, so no
/// chunk is written before every chunk that reads it has run.
fn in_levels(chunks: usize, b: usize, par: bool, chunk: impl Fn(usize) + Sync) {
    let run = |range: std::ops::Range<usize>| match par {
        true => range.into_par_iter().for_each(&chunk),
        false => range.for_each(&chunk),
    };
    if b == 1 {
        return run(0..chunks);
    }
    let mut hi = chunks;
    while hi > 1 {
        let lo = (hi / b).max(1);
        run(lo..hi);
        hi = lo;
    }
    chunk(0);
}

/// Evaluations on H_n (natural) in `src` to evaluations on the coset of
/// size dst.len() whose table `scale` is `bitrev_powers(shift, 1/n, n)`.
pub(crate) fn lde_column(dst: &mut [F], src: &[F], scale: &[F], tw_inv: &Tables, tw_fwd: &Tables) {
    let n = src.len();
    dif(&mut dst[..n], Some(src), tw_inv, n >= PAR_MIN);
    bitrev_coeffs_to_evals(dst, n, Some(scale), tw_fwd);
}

/// Slices (log) a column is cut in by `coset_rows` for `k` positions of
/// 2^log_n, or `None` when the whole transform costs less: with C = 2^c
/// slices, the C-point DFTs cost n c / 2 butterflies and the positions
/// 2 k n / C multiplications, against n log_n / 2 and a permuting pass.
pub(crate) fn coset_rows_split(log_n: u32, k: usize) -> Option<u32> {
    let n = 1u64 << log_n;
    let cost = |c: u32| n * c as u64 / 2 + 2 * k as u64 * (n >> c);
    let best = (1..=log_n.min(12)).min_by_key(|&c| cost(c))?;
    (log_n >= 8 && cost(best) < n * (log_n as u64 / 2 + 1)).then_some(best)
}

/// The polynomial `coeffs` (natural order, 2^log_n of them) at
/// shift * w^k for each k of `positions` (w generates H_n), without the
/// whole transform. Cut the coefficients into C = 2^log_c slices of
/// R = n / C: with i = i1 + R i2 and k = k2 + C k1, the value is
/// sum_i1 (shift w^k)^i1 Y[i1][k2], where Y[i1][.] is the C-point DFT of
/// coeffs[i1 + R .] shift^(R .) (shift^i = shift^i1 shift^(R i2): the
/// first factor rides on the positions' powers, the second is one
/// constant per slice). The DFTs run across the slices, a tile of T
/// consecutive i1 per task, each tile's C x T block of `scratch` (n
/// elements) its own (DIF, so the block's row p holds Y[.][bitrev(p)]);
/// each position is then a dot product of R terms with the powers of
/// shift w^k, a run of T from every block. Parallel over tiles, then over
/// positions, so a few columns still fill the cores.
pub(crate) fn coset_rows_column(coeffs: &[F], shift: F, positions: &[usize], log_c: u32, scratch: &mut [F]) -> Vec<F> {
    const T: usize = 128;
    let n = coeffs.len();
    let (c, r) = (1usize << log_c, n >> log_c);
    let simd = crate::simd::available();
    let t = T.min(r);
    let slice_step = shift.pow(r as u64);
    scratch.par_chunks_mut(c * t).enumerate().for_each(|(q, block)| {
        let i0 = q * t;
        let mut factor = F::ONE;
        for (p, row) in block.chunks_mut(t).enumerate() {
            let at = p * r + i0;
            crate::simd::binop::<{ crate::simd::MUL }>(row, Some(&coeffs[at..at + t]), None, factor);
            factor *= slice_step;
        }
        let mut tw = vec![F::ZERO; t];
        let mut h = c / 2;
        while h >= 1 {
            let root = F::two_adic_root((2 * h).trailing_zeros());
            let mut w = F::ONE;
            for j in 0..h {
                tw.fill(w);
                for b in (0..c).step_by(2 * h) {
                    let (lo, hi) = block.split_at_mut((b + j + h) * t);
                    butterflies_dif(&mut lo[(b + j) * t..(b + j + 1) * t], &mut hi[..t], &tw, simd);
                }
                w *= root;
            }
            h /= 2;
        }
    });
    let w_n = F::two_adic_root(n.trailing_zeros());
    let blocks: &[F] = scratch;
    positions
        .par_iter()
        .map_init(
            || vec![F::ZERO; r],
            |powers, &k| {
                let y = shift * w_n.pow(k as u64);
                let lanes = 8.min(r);
                let mut acc = F::ONE;
                for v in &mut powers[..lanes] {
                    *v = acc;
                    acc *= y;
                }
                for i in lanes..r {
                    powers[i] = powers[i - lanes] * acc;
                }
                let row = bitrev(k & (c - 1), log_c) * t;
                blocks
                    .chunks(c * t)
                    .zip(powers.chunks(t))
                    .map(|(block, pw)| crate::simd::dot(&block[row..row + t], pw))
                    .sum()
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(n: usize, seed: u64) -> Vec<F> {
        let mut s = seed | 1;
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                // Some edge values among the random ones.
                match i % 97 {
                    0 => F::new(P - 1),
                    1 => F::ZERO,
                    _ => F::new(s),
                }
            })
            .collect()
    }

    fn naive_dft(a: &[F], inverse: bool) -> Vec<F> {
        let n = a.len();
        let mut w = F::two_adic_root(n.trailing_zeros());
        if inverse {
            w = w.inverse().unwrap();
        }
        (0..n)
            .map(|k| {
                let wk = w.pow(k as u64);
                let mut acc = F::ZERO;
                for &v in a.iter().rev() {
                    acc = acc * wk + v;
                }
                acc
            })
            .collect()
    }

    #[test]
    fn register_small_layers_match_the_scalar_layers() {
        for inverse in [false, true] {
            let tw = build_twiddles(13, inverse);
            for log_n in 4..=13u32 {
                let a = column(1 << log_n, log_n as u64 * 31 + inverse as u64);
                for from in 0..=3u32 {
                    for dif in [true, false] {
                        let mut fast = a.clone();
                        let done = crate::simd::small_layers(&mut fast, &tw, from, dif, crate::simd::available());
                        let mut slow = a.clone();
                        let hs: Vec<usize> = if dif {
                            (0..from).rev().map(|s| 1 << s).collect()
                        } else {
                            (from..3).map(|s| 1 << s).collect()
                        };
                        for h in hs {
                            // Half-blocks below 8 always run the scalar loops.
                            layer(&mut slow, h, &tw, dif);
                        }
                        if done == 0 {
                            assert!(!crate::simd::available());
                            continue;
                        }
                        assert_eq!(done, fast.len());
                        assert_eq!(fast, slow, "log_n {log_n} from {from} dif {dif} inverse {inverse}");
                    }
                }
            }
        }
    }

    #[test]
    fn sums_past_p_come_out_canonical_through_every_pass() {
        // Near-p values next to small ones: their sums land in [p, 2^64),
        // which every butterfly must bring back below p.
        let tw = Twiddles::default();
        let (fwd, inv) = (tw.get(false), tw.get(true));
        let mixed = |i: u64, _n: u64| match i % 4 {
            0 => F::new(P - 1 - i % 7),
            1 => F::new(1 + i % 5),
            2 => F::new(P - (1 << 31) + i),
            _ => F::new((1 << 32) - 1 - i % 3),
        };
        // Quarters 0, near p, 0, small: DIF's first layer sums past p in
        // the second quarter, and its second layer subtracts those sums
        // from the zeros of the first.
        let quarters = |i: u64, n: u64| match 4 * i / n {
            1 => F::new(P - 1 - i % 3),
            3 => F::new(1 + i % 5),
            _ => F::ZERO,
        };
        for (log_n, pattern) in [4u32, 5, 8, 12, 13, 14].into_iter().flat_map(|l| [(l, 0), (l, 1)]) {
            let n = 1usize << log_n;
            let a: Vec<F> = (0..n as u64).map(|i| [mixed, quarters][pattern](i, n as u64)).collect();
            let mut evals = vec![F::ZERO; n];
            ntt_column(&mut evals, &a, &fwd);
            if log_n <= 12 {
                assert_eq!(evals, naive_dft(&a, false), "2^{log_n} pattern {pattern}");
            }
            let mut d = vec![F::ZERO; n];
            dif(&mut d, Some(&a), &fwd, true);
            bit_reverse(&mut d);
            assert_eq!(d, evals, "dif 2^{log_n} pattern {pattern}");
            let mut back = vec![F::ZERO; n];
            intt_column(&mut back, &evals, &inv);
            assert_eq!(back, a, "round trip 2^{log_n} pattern {pattern}");
            assert!(evals.iter().chain(&d).all(|v| v.value() < P), "canonical 2^{log_n} pattern {pattern}");
        }
    }

    #[test]
    fn column_transforms_match_the_dft() {
        for log_n in 0..=10u32 {
            let n = 1usize << log_n;
            let a = column(n, 7 + log_n as u64);
            let tw = Twiddles::default();
            let (fwd, inv) = (tw.get(false), tw.get(true));
            let mut evals = vec![F::ZERO; n];
            ntt_column(&mut evals, &a, &fwd);
            assert_eq!(evals, naive_dft(&a, false), "ntt 2^{log_n}");
            let mut coeffs = vec![F::ZERO; n];
            intt_column(&mut coeffs, &a, &inv);
            let n_inv = inv_pow2(log_n);
            let want: Vec<F> = naive_dft(&a, true).into_iter().map(|v| v * n_inv).collect();
            assert_eq!(coeffs, want, "intt 2^{log_n}");
            // DIF (natural in, bit-reversed out) against the same DFT.
            let mut d = a.clone();
            dif(&mut d, None, &fwd, false);
            bit_reverse(&mut d);
            assert_eq!(d, naive_dft(&a, false), "dif 2^{log_n}");
        }
    }

    #[test]
    fn the_blocked_bit_reversal_is_the_gather() {
        // Below, at and past the tile path's smallest column, threaded.
        for log_n in [0u32, 1, 9, 10, 11, 12, 13, 16] {
            let n = 1usize << log_n;
            let a = column(n, 31 + log_n as u64);
            for s in [F::ONE, F::new(0x1234_5678_9ABC)] {
                let mut d = vec![F::ZERO; n];
                bitrev_copy(&mut d, &a, if s == F::ONE { Scale::One } else { Scale::By(s) });
                let want: Vec<F> = (0..n).map(|j| a[bitrev(j, log_n)] * s).collect();
                assert_eq!(d, want, "2^{log_n}");
            }
            // A factor per written position.
            let table = column(n, 5 + log_n as u64);
            let mut d = vec![F::ZERO; n];
            bitrev_copy(&mut d, &a, Scale::Table(&table));
            let want: Vec<F> = (0..n).map(|j| a[bitrev(j, log_n)] * table[j]).collect();
            assert_eq!(d, want, "2^{log_n} by table");
            let pows = bitrev_powers(F::new(7), F::new(3), n);
            assert!(pows.iter().enumerate().all(|(p, &v)| v == F::new(3) * F::new(7).pow(bitrev(p, log_n) as u64)));
        }
    }

    #[test]
    fn spreading_chunk_by_chunk_is_the_spread_then_the_transform() {
        // From one chunk to 2^8 chunks at every blowup, so that `in_levels`
        // runs one level to several, threaded and not, with fused passes
        // above the chunks.
        let tw = Twiddles::default();
        let fwd = tw.get(false);
        for log_big in [3u32, 4, 12, 13, 16, 18, 20] {
            for log_b in 0..=4u32.min(log_big) {
                let (big, b) = (1usize << log_big, 1usize << log_b);
                let coeffs = column(big / b, 7 + log_big as u64);
                let scale = column(big / b, 3 + log_b as u64);
                for (scale, par) in [(None, false), (Some(&scale[..]), false), (Some(&scale[..]), true)] {
                    // The zero-padded input in bit-reversed order: value p at p b.
                    let mut want = vec![F::ZERO; big];
                    for (p, &c) in coeffs.iter().enumerate() {
                        want[p * b] = c * scale.map_or(F::ONE, |s| s[p]);
                    }
                    dit_spread(&mut want, 1, None, &fwd, false);
                    let mut got = vec![F::ZERO; big];
                    got[..big / b].copy_from_slice(&coeffs);
                    dit_spread(&mut got, b, scale, &fwd, par);
                    assert_eq!(got, want, "2^{log_big}, blowup 2^{log_b}, scaled {}, par {par}", scale.is_some());
                }
            }
        }
    }

    #[test]
    fn no_fused_pass_runs_one_layer_alone() {
        for log_n in 0..=28u32 {
            let chunk = chunk_size(1 << log_n);
            assert!(chunk.is_power_of_two() && chunk <= MAX_CHUNK.min(1 << log_n));
            let above = log_n - chunk.trailing_zeros();
            assert_ne!(above % FUSE, 1, "2^{log_n} in chunks of {chunk}");
        }
    }

    #[test]
    fn long_columns_round_trip_through_every_pass() {
        // Large enough for the fused tile passes, the threaded paths and
        // the register layers together; 2^13, 2^16, 2^18 and 2^21 run in
        // chunks larger than CHUNK.
        for log_n in [13u32, 14, 16, 17, 18, 19, 21] {
            let n = 1usize << log_n;
            let a = column(n, 99 + log_n as u64);
            let tw = Twiddles::default();
            let (fwd, inv) = (tw.get(false), tw.get(true));
            let mut evals = vec![F::ZERO; n];
            ntt_column(&mut evals, &a, &fwd);
            // DIF's fused passes run largest half-block first.
            let mut d = a.clone();
            dif(&mut d, None, &fwd, true);
            bit_reverse(&mut d);
            assert_eq!(d, evals, "dif 2^{log_n}");
            // Out of place: the first pass gathers from the input.
            let mut o = vec![F::ZERO; n];
            dif(&mut o, Some(&a), &fwd, true);
            bit_reverse(&mut o);
            assert_eq!(o, evals, "dif out of place 2^{log_n}");
            // Spot-check evaluations by Horner.
            let w = F::two_adic_root(log_n);
            for k in [0usize, 1, 5, n / 2 + 3, n - 1] {
                let x = w.pow(k as u64);
                assert_eq!(evals[k], a.iter().rev().fold(F::ZERO, |acc, &v| acc * x + v), "2^{log_n} row {k}");
            }
            let mut back = vec![F::ZERO; n];
            intt_column(&mut back, &evals, &inv);
            assert_eq!(back, a);
            // On a coset of the column's size and of twice it.
            let shift = F::new(7);
            let scale = bitrev_powers(shift, F::ONE, n);
            for log_b in [0u32, 1] {
                let mut coset = vec![F::ZERO; n << log_b];
                coset_column(&mut coset, &a, Some(&scale), &fwd);
                let w = F::two_adic_root(log_n + log_b);
                for k in [0usize, 3, n / 2 + 1, (n << log_b) - 1] {
                    let x = shift * w.pow(k as u64);
                    assert_eq!(coset[k], a.iter().rev().fold(F::ZERO, |acc, &v| acc * x + v), "2^{log_n} row {k}");
                }
            }
        }
    }

    #[test]
    fn pass_tables_hold_each_tiles_twiddles_in_reading_order() {
        for inverse in [false, true] {
            let layers = build_twiddles(17, inverse);
            for (h_low, r) in [(TILE, 1u32), (TILE, 5), (4 * TILE, 3), (1 << 12, 5)] {
                let table = pass_table(h_low, r, inverse);
                let per_tile = ((1usize << r) - 1) * TILE;
                assert_eq!(table.len(), h_low / TILE * per_tile);
                for tile in [0, h_low / TILE / 2, h_low / TILE - 1] {
                    for (s, pair) in steps(r) {
                        for m in 0..1usize << s {
                            // A lone layer's run is layer s's twiddles; a
                            // pair's are layer s + 1's (u), layer s's (u^2)
                            // and u^3.
                            let k = |s: u32| (h_low << s) + m * h_low + tile * TILE;
                            let run = |q: usize| {
                                let at = tile * per_tile + ((1 << s) - 1 + if pair { 3 * m + q } else { m }) * TILE;
                                &table[at..at + TILE]
                            };
                            let at = format!("h_low {h_low} r {r} tile {tile} s {s} m {m}");
                            if !pair {
                                assert_eq!(run(0), &layers[k(s)..k(s) + TILE], "{at}");
                                continue;
                            }
                            assert_eq!(run(1), &layers[k(s)..k(s) + TILE], "{at}");
                            assert_eq!(run(0), &layers[k(s + 1)..k(s + 1) + TILE], "{at}");
                            let cubes: Vec<F> = run(0).iter().map(|&u| u * u * u).collect();
                            assert_eq!(run(2), &cubes[..], "{at}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_pass_table_asked_for_at_once_by_many_threads_is_built_once() {
        let tw = Twiddles::default();
        let start = std::sync::Barrier::new(8);
        let tables: Vec<Arc<Vec<F>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        tw.get(false).pass(1 << 14, 5)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(tables.iter().all(|t| Arc::ptr_eq(t, &tables[0])));
        assert_eq!(*tables[0], pass_table(1 << 14, 5, false));
    }
}
