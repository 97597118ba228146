// LogUp running sums: an inclusive prefix sum over one extension column
// (3 base columns of stride `stride`), in blocks of SCAN_THREADS x
// SCAN_ITEMS rows; the block totals are scanned the same way and added
// back. Field addition is exact, so the grouping does not change a value.

#define SCAN_THREADS 256
#define SCAN_ITEMS 8

// Scans each block's rows in place and writes its total to sums[block].
extern "C" __global__ void ext_scan_blocks(u64* col, u64 stride, u64 n, u64* sums, u64 sums_stride) {
    __shared__ u64 sa[SCAN_THREADS], sb[SCAN_THREADS], sc[SCAN_THREADS];
    const u32 t = threadIdx.x;
    const u64 base = ((u64)blockIdx.x * SCAN_THREADS + t) * SCAN_ITEMS;
    ext3 v[SCAN_ITEMS];
    ext3 acc = e_zero();
    for (u32 j = 0; j < SCAN_ITEMS; j++) {
        if (base + j < n) acc = e_add(acc, e_load(col, stride, base + j));
        v[j] = acc;
    }
    sa[t] = acc.a;
    sb[t] = acc.b;
    sc[t] = acc.c;
    __syncthreads();
    for (u32 off = 1; off < SCAN_THREADS; off <<= 1) {
        ext3 prev = t >= off ? e_make(sa[t - off], sb[t - off], sc[t - off]) : e_zero();
        __syncthreads();
        ext3 cur = e_add(e_make(sa[t], sb[t], sc[t]), prev);
        sa[t] = cur.a;
        sb[t] = cur.b;
        sc[t] = cur.c;
        __syncthreads();
    }
    const ext3 prefix = t > 0 ? e_make(sa[t - 1], sb[t - 1], sc[t - 1]) : e_zero();
    for (u32 j = 0; j < SCAN_ITEMS; j++) {
        if (base + j < n) e_store(col, stride, base + j, e_add(v[j], prefix));
    }
    if (t == SCAN_THREADS - 1) {
        e_store(sums, sums_stride, blockIdx.x, e_make(sa[t], sb[t], sc[t]));
    }
}

// Adds the inclusive scan of the block totals before each block.
extern "C" __global__ void ext_add_block_offsets(u64* col, u64 stride, u64 n, const u64* __restrict__ sums,
                                                 u64 sums_stride) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 b = i / (SCAN_THREADS * SCAN_ITEMS);
    if (i >= n || b == 0) return;
    e_store(col, stride, i, e_add(e_load(col, stride, i), e_load(sums, sums_stride, b - 1)));
}
