// Constraint composition by interpretation: one thread per LDE row runs the
// same instruction list (built on the host from the constraint IR, values
// in a slot array reused by liveness) and accumulates each constraint,
// weighted by its alpha power, into its domain's sum; the quotient tail is
// the generated kernel's. The alternative to the NVRTC-generated kernel
// (see backend-cuda's compose.rs for which is used and why).
//
// Instruction: w0 = op | dst << 8 | a << 24 | b << 40, w1 = immediate.

#define INTERP_SLOTS 96

enum {
    OP_CONST = 0,    // imm: the value
    OP_MAIN = 1,     // imm: col | offset << 32
    OP_FIXED = 2,    // imm: col | offset << 32
    OP_AUX = 3,      // imm: extension col | offset << 32
    OP_CST_EXT = 4,  // imm: index of 3 words in cst
    OP_CST_BASE = 5, // imm: index in cst
    OP_ADD_BB = 6,
    OP_ADD_EE = 7,
    OP_SUB_BB = 8,
    OP_SUB_EE = 9,
    OP_MUL_BB = 10,
    OP_MUL_EB = 11,
    OP_MUL_BE = 12,
    OP_MUL_EE = 13,
    OP_NEG_B = 14,
    OP_NEG_E = 15,
    OP_ACC = 16,     // imm: domain | alpha word index << 2
};

// Offset 0 reads row i of mainm/auxm/fixm; offset o > 0 reads row
// (i + o * nb) & mask of mainn/auxn/fixn: the same matrices with nb = B on
// a whole LDE coset, a piece's next rows with nb = 0.
extern "C" __global__ void compose_interp(const u64* __restrict__ prog, u64 nins, const u64* __restrict__ mainm,
                                          const u64* __restrict__ auxm, const u64* __restrict__ fixm,
                                          const u64* __restrict__ mainn, const u64* __restrict__ auxn,
                                          const u64* __restrict__ fixn, const u64* __restrict__ cst,
                                          const u64* __restrict__ zinv_all, const u64* __restrict__ tw, u64* out,
                                          u64 log_big, u64 log_blowup, u64 nb, u64 shift, u64 tw_log, u64 g_inv,
                                          u64 log_stride, u64 domains) {
    const u64 N = 1ull << log_big;
    const u64 mask = N - 1;
    const u64 NM = N << log_stride;
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    const u64 B = 1ull << log_blowup;
    ext3 slot[INTERP_SLOTS];
    ext3 g[4] = {e_zero(), e_zero(), e_zero(), e_zero()};
    for (u64 pc = 0; pc < nins; pc++) {
        const u64 w = prog[2 * pc];
        const u64 imm = prog[2 * pc + 1];
        const u32 op = w & 0xff, d = (w >> 8) & 0xffff, a = (w >> 24) & 0xffff, b = (w >> 40) & 0xffff;
        const u64 offset = imm >> 32;
        const u64 row = ((i + offset * nb) & mask) << log_stride;
        const u64 col = imm & 0xffffffffull;
        ext3 r;
        switch (op) {
        case OP_CONST: r = e_make(imm, 0, 0); break;
        case OP_MAIN: r = e_make((offset ? mainn : mainm)[col * NM + row], 0, 0); break;
        case OP_FIXED: r = e_make((offset ? fixn : fixm)[col * NM + row], 0, 0); break;
        case OP_AUX: r = e_load((offset ? auxn : auxm) + 3 * col * NM, NM, row); break;
        case OP_CST_EXT: r = e_make(cst[imm], cst[imm + 1], cst[imm + 2]); break;
        case OP_CST_BASE: r = e_make(cst[imm], 0, 0); break;
        case OP_ADD_BB: r = e_make(f_add(slot[a].a, slot[b].a), 0, 0); break;
        case OP_ADD_EE: r = e_add(slot[a], slot[b]); break;
        case OP_SUB_BB: r = e_make(f_sub(slot[a].a, slot[b].a), 0, 0); break;
        case OP_SUB_EE: r = e_sub(slot[a], slot[b]); break;
        case OP_MUL_BB: r = e_make(f_mul(slot[a].a, slot[b].a), 0, 0); break;
        case OP_MUL_EB: r = e_mul_base(slot[a], slot[b].a); break;
        case OP_MUL_BE: r = e_mul_base(slot[b], slot[a].a); break;
        case OP_MUL_EE: r = e_mul(slot[a], slot[b]); break;
        case OP_NEG_B: r = e_make(f_neg(slot[a].a), 0, 0); break;
        case OP_NEG_E: r = e_neg(slot[a]); break;
        default: {
            const u64 k = imm >> 2;
            g[imm & 3] = e_add(g[imm & 3], e_mul(e_make(cst[k], cst[k + 1], cst[k + 2]), slot[a]));
            continue;
        }
        }
        slot[d] = r;
    }
    ext3 q = e_zero();
    const u64 x = f_mul(shift, root_pow(tw, tw_log, log_big, i));
    const u64 za = zinv_all[i & (B - 1)];
    if (domains & 1) q = e_add(q, e_mul_base(g[0], za));
    if (domains & 2) q = e_add(q, e_mul_base(g[1], f_mul(f_sub(x, g_inv), za)));
    if ((domains & 12) == 12) {
        const u64 d1 = f_sub(x, 1ull);
        const u64 d2 = f_sub(x, g_inv);
        const u64 dinv = f_inv(f_mul(d1, d2));
        q = e_add(q, e_mul_base(g[2], f_mul(dinv, d2)));
        q = e_add(q, e_mul_base(g[3], f_mul(dinv, d1)));
    } else if (domains & 4) {
        q = e_add(q, e_mul_base(g[2], f_inv(f_sub(x, 1ull))));
    } else if (domains & 8) {
        q = e_add(q, e_mul_base(g[3], f_inv(f_sub(x, g_inv))));
    }
    e_store(out, N, i, q);
}
