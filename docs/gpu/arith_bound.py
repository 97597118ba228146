#!/usr/bin/env python3
"""The arithmetic floor of a Goldilocks NTT on this GPU: the radix-2
butterflies of a transform run from registers only (no global or shared
memory traffic beyond one load and one store per thread), with the field
operations of kernels-cuda/src/cuda/field.cuh. Whatever a real kernel does
with memory, it cannot beat this time; comparing it with the bandwidth floor
says which of the two bounds an NTT target runs into.

Run from the repository root on the GPU machine (needs cupy):
    python3 docs/gpu/arith_bound.py
"""
import cupy as cp

FIELD_H = open("kernels-cuda/src/cuda/field.cuh").read()

SRC = FIELD_H + r"""
// Four independent DIT butterflies a round over eight registers, the pairs
// changing every round so the rounds depend on each other.
extern "C" __global__ void bfly_rounds(const u64* __restrict__ in, const u64* __restrict__ tw, u64* out,
                                       u64 rounds) {
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 v[8];
    for (int j = 0; j < 8; j++) v[j] = in[(t * 8 + j) & 0xFFFFF];
    u64 w0 = tw[t & 1023], w1 = tw[(t + 1) & 1023], w2 = tw[(t + 2) & 1023], w3 = tw[(t + 3) & 1023];
    for (u64 r = 0; r < rounds; r++) {
        const int s = (r % 3 == 0) ? 4 : (r % 3 == 1) ? 2 : 1;
#define BF(a, b, w) { u64 m = f_mul(v[b], w); v[b] = f_sub(v[a], m); v[a] = f_add(v[a], m); }
        if (s == 4) { BF(0, 4, w0); BF(1, 5, w1); BF(2, 6, w2); BF(3, 7, w3); }
        else if (s == 2) { BF(0, 2, w0); BF(1, 3, w1); BF(4, 6, w2); BF(5, 7, w3); }
        else { BF(0, 1, w0); BF(2, 3, w1); BF(4, 5, w2); BF(6, 7, w3); }
    }
    u64 acc = 0;
    for (int j = 0; j < 8; j++) acc ^= v[j];
    out[t] = acc;
}

// Butterflies with no multiplication at all (x + y, x - y): what any FFT
// needs however cheap its twiddles are, with canonical or lazy reduction
// (lazy: values kept below 2^64 and reduced only on store).
__device__ __forceinline__ u64 lazy_add(u64 a, u64 b) {
    u64 s = a + b;
    return s + (s < a ? GL_EPS : 0ull);
}
__device__ __forceinline__ u64 lazy_sub(u64 a, u64 b) {
    u64 d = a - b;
    return d - (a < b ? GL_EPS : 0ull);
}
extern "C" __global__ void addsub_rounds(const u64* __restrict__ in, const u64* __restrict__ tw, u64* out,
                                         u64 rounds) {
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 v[8];
    for (int j = 0; j < 8; j++) v[j] = in[(t * 8 + j) & 0xFFFFF];
    for (u64 r = 0; r < rounds; r++) {
        const int s = (r % 3 == 0) ? 4 : (r % 3 == 1) ? 2 : 1;
#define AS(a, b) { u64 x = v[a]; v[a] = f_add(x, v[b]); v[b] = f_sub(x, v[b]); }
        if (s == 4) { AS(0, 4); AS(1, 5); AS(2, 6); AS(3, 7); }
        else if (s == 2) { AS(0, 2); AS(1, 3); AS(4, 6); AS(5, 7); }
        else { AS(0, 1); AS(2, 3); AS(4, 5); AS(6, 7); }
    }
    u64 acc = 0;
    for (int j = 0; j < 8; j++) acc ^= v[j];
    out[t] = acc;
}
extern "C" __global__ void lazy_addsub_rounds(const u64* __restrict__ in, const u64* __restrict__ tw, u64* out,
                                              u64 rounds) {
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 v[8];
    for (int j = 0; j < 8; j++) v[j] = in[(t * 8 + j) & 0xFFFFF];
    for (u64 r = 0; r < rounds; r++) {
        const int s = (r % 3 == 0) ? 4 : (r % 3 == 1) ? 2 : 1;
#define LS(a, b) { u64 x = v[a]; v[a] = lazy_add(x, v[b]); v[b] = lazy_sub(x, v[b]); }
        if (s == 4) { LS(0, 4); LS(1, 5); LS(2, 6); LS(3, 7); }
        else if (s == 2) { LS(0, 2); LS(1, 3); LS(4, 6); LS(5, 7); }
        else { LS(0, 1); LS(2, 3); LS(4, 5); LS(6, 7); }
    }
    u64 acc = 0;
    for (int j = 0; j < 8; j++) acc ^= v[j];
    out[t] = acc;
}

// Only the multiplications (one per butterfly), to split the cost.
extern "C" __global__ void mul_rounds(const u64* __restrict__ in, const u64* __restrict__ tw, u64* out,
                                      u64 rounds) {
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 v[4];
    for (int j = 0; j < 4; j++) v[j] = in[(t * 4 + j) & 0xFFFFF];
    u64 w0 = tw[t & 1023], w1 = tw[(t + 1) & 1023], w2 = tw[(t + 2) & 1023], w3 = tw[(t + 3) & 1023];
    for (u64 r = 0; r < rounds; r++) {
        v[0] = f_mul(v[0], w0); v[1] = f_mul(v[1], w1); v[2] = f_mul(v[2], w2); v[3] = f_mul(v[3], w3);
    }
    out[t] = v[0] ^ v[1] ^ v[2] ^ v[3];
}
"""

mod = cp.RawModule(code=SRC, options=("-std=c++17",))
bfly = mod.get_function("bfly_rounds")
mul = mod.get_function("mul_rounds")
addsub = mod.get_function("addsub_rounds")
lazy = mod.get_function("lazy_addsub_rounds")
P = 0xFFFFFFFF00000001
rng = cp.random.default_rng(7)
inp = (rng.integers(1, 2**62, size=1 << 20, dtype=cp.uint64) % P).astype(cp.uint64)
tw = (rng.integers(1, 2**62, size=1024, dtype=cp.uint64) % P).astype(cp.uint64)
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
threads, blocks = 256, sms * 16
nthreads = threads * blocks
out = cp.zeros(nthreads, dtype=cp.uint64)


def timed(f, rounds, reps=7):
    start, end = cp.cuda.Event(), cp.cuda.Event()
    f((blocks,), (threads,), (inp, tw, out, cp.uint64(rounds)))
    ts = []
    for _ in range(reps):
        start.record()
        f((blocks,), (threads,), (inp, tw, out, cp.uint64(rounds)))
        end.record()
        end.synchronize()
        ts.append(cp.cuda.get_elapsed_time(start, end))
    return sorted(ts)[reps // 2]


FLOOR_BW = 4.3e12
cases = [
    # (what, butterflies, bytes one read + one write moves)
    ("forward NTT 2^20 x 64", 64 * (1 << 19) * 20, 2 * 8 * 64 * (1 << 20)),
    ("iNTT + coset LDE 2^20 x 64, blowup 2", 64 * ((1 << 19) * 20 + (1 << 20) * 20), 8 * 64 * ((1 << 20) + (1 << 21))),
    ("iNTT + coset LDE 2^20 x 64, blowup 4", 64 * ((1 << 19) * 20 + (1 << 21) * 20), 8 * 64 * ((1 << 20) + (1 << 22))),
]
print(f"{sms} SMs, {nthreads} threads, 4 butterflies a round per thread")
for what, bf, nbytes in cases:
    rounds = max(1, round(bf / (4 * nthreads)))
    ms = timed(bfly, rounds)
    mul_ms = timed(mul, rounds)
    as_ms = timed(addsub, rounds)
    lazy_ms = timed(lazy, rounds)
    floor = nbytes / FLOOR_BW * 1e3
    print(
        f"{what}: {bf / 1e9:.2f} G butterflies (LDE: zero-padded level skipped) -> "
        f"{ms:.3f} ms of butterflies, {mul_ms:.3f} ms of their multiplications alone, "
        f"{as_ms:.3f} ms of their additions and subtractions alone ({lazy_ms:.3f} ms reduced lazily); "
        f"bandwidth floor {floor:.3f} ms, 3x floor {3 * floor:.3f} ms; butterflies / floor = {ms / floor:.1f}x"
    )
