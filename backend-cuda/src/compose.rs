//! Constraint composition: CUDA source generated from the constraint IR.
//!
//! Each AIR's `ConstraintSystem` becomes one straight-line kernel (one
//! thread per LDE row; every DAG node a register value, base-field nodes
//! with base arithmetic), compiled by NVRTC once and cached on disk by its
//! source hash. Against an interpreter kernel this removes the per-node
//! dispatch, the value stack in local memory and the operand loads; the
//! price is one NVRTC compilation per AIR (cached across runs).

use backend_api::ir::{ConstraintDomain, ConstraintSystem, Leaf, Node};
use backend_api::LogUp;
use std::fmt::Write;

pub(crate) const KERNEL: &str = "kiln_compose";

/// Where the constant buffer keeps each kind of value (u64 offsets).
pub(crate) struct ConstLayout {
    pub challenges: usize,
    pub aux_values: usize,
    pub publics: usize,
    pub alphas: usize,
    pub len: usize,
}

pub(crate) fn const_layout(cs: &ConstraintSystem) -> ConstLayout {
    let l = &cs.layout;
    let challenges = 0;
    let aux_values = challenges + 3 * l.num_challenges;
    let publics = aux_values + 3 * l.num_aux_values;
    let alphas = publics + l.num_public;
    let len = alphas + 3 * cs.constraints.len();
    ConstLayout { challenges, aux_values, publics, alphas, len }
}

/// The kernel source (field header included).
pub(crate) fn generate(cs: &ConstraintSystem) -> String {
    let cl = const_layout(cs);
    let mut s = String::from(kernels_cuda::FIELD_H);
    s.push_str(
        "\nextern \"C\" __global__ void kiln_compose(const u64* __restrict__ mainm, const u64* __restrict__ auxm,\n\
         const u64* __restrict__ fixm, const u64* __restrict__ cst, const u64* __restrict__ zinv_all,\n\
         const u64* __restrict__ tw, u64* out, u64 log_big, u64 log_blowup, u64 shift, u64 tw_log, u64 g_inv) {\n\
         const u64 N = 1ull << log_big;\n const u64 mask = N - 1;\n\
         const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;\n if (i >= N) return;\n\
         const u64 B = 1ull << log_blowup;\n",
    );
    emit_nodes(&mut s, cs, &cl);
    emit_quotient(&mut s, cs, &cl);
    s
}

/// Every node some constraint depends on, as a register value `v{node}`
/// (base-field nodes with base arithmetic). Trace leaves read row
/// `(i + offset * B) & mask` of `mainm`, `fixm` or `auxm` (columns of `N`);
/// challenges, auxiliary values and publics come from `cst`.
fn emit_nodes(s: &mut String, cs: &ConstraintSystem, cl: &ConstLayout) {
    let is_base = cs.node_is_base();
    // Only nodes some constraint depends on.
    let mut live = vec![false; cs.nodes.len()];
    for c in &cs.constraints {
        live[c.node as usize] = true;
    }
    for i in (0..cs.nodes.len()).rev() {
        if !live[i] {
            continue;
        }
        match cs.nodes[i] {
            Node::Add(a, b) | Node::Sub(a, b) | Node::Mul(a, b) => {
                live[a as usize] = true;
                live[b as usize] = true;
            }
            Node::Neg(a) => live[a as usize] = true,
            Node::Leaf(_) => {}
        }
    }
    for (idx, node) in cs.nodes.iter().enumerate() {
        if !live[idx] {
            continue;
        }
        let ty = if is_base[idx] { "u64" } else { "ext3" };
        let expr = match *node {
            Node::Leaf(Leaf::Const(v)) => format!("{}ull", v.value()),
            Node::Leaf(Leaf::Main { col, offset }) => {
                format!("mainm[{col}ull * N + ((i + {offset}ull * B) & mask)]")
            }
            Node::Leaf(Leaf::Fixed { col, offset }) => {
                format!("fixm[{col}ull * N + ((i + {offset}ull * B) & mask)]")
            }
            Node::Leaf(Leaf::Aux { col, offset }) => {
                format!("e_load(auxm + {}ull * N, N, (i + {offset}ull * B) & mask)", 3 * col as u64)
            }
            Node::Leaf(Leaf::Challenge(k)) => {
                let o = cl.challenges + 3 * k as usize;
                format!("e_make(cst[{o}], cst[{}], cst[{}])", o + 1, o + 2)
            }
            Node::Leaf(Leaf::AuxValue(k)) => {
                let o = cl.aux_values + 3 * k as usize;
                format!("e_make(cst[{o}], cst[{}], cst[{}])", o + 1, o + 2)
            }
            Node::Leaf(Leaf::Public(k)) => format!("cst[{}]", cl.publics + k as usize),
            Node::Add(a, b) => format!("k_add(v{a}, v{b})"),
            Node::Sub(a, b) => format!("k_sub(v{a}, v{b})"),
            Node::Mul(a, b) => format!("k_mul(v{a}, v{b})"),
            Node::Neg(a) => format!("k_neg(v{a})"),
        };
        let _ = writeln!(s, " const {ty} v{idx} = {expr};");
    }
}

/// Sums the constraints, weighted by alpha^k, per domain, divides by each
/// domain's vanishing polynomial at x and stores the quotient at row i.
fn emit_quotient(s: &mut String, cs: &ConstraintSystem, cl: &ConstLayout) {
    let groups = [
        (ConstraintDomain::AllRows, "g_all"),
        (ConstraintDomain::Transition, "g_tr"),
        (ConstraintDomain::FirstRow, "g_first"),
        (ConstraintDomain::LastRow, "g_last"),
    ];
    let has = |d: ConstraintDomain| cs.constraints.iter().any(|c| c.domain == d);
    for (d, name) in groups {
        if has(d) {
            let _ = writeln!(s, " ext3 {name} = e_zero();");
        }
    }
    for (k, c) in cs.constraints.iter().enumerate() {
        let name = groups.iter().find(|g| g.0 == c.domain).map(|g| g.1).expect("all domains listed");
        let o = cl.alphas + 3 * k;
        let _ = writeln!(
            s,
            " {name} = e_add({name}, k_mul(e_make(cst[{o}], cst[{}], cst[{}]), v{}));",
            o + 1,
            o + 2,
            c.node
        );
    }
    s.push_str(" ext3 q = e_zero();\n");
    let (all, tr, first, last) = (
        has(ConstraintDomain::AllRows),
        has(ConstraintDomain::Transition),
        has(ConstraintDomain::FirstRow),
        has(ConstraintDomain::LastRow),
    );
    s.push_str(" const u64 x = f_mul(shift, root_pow(tw, tw_log, log_big, i));\n");
    if all || tr {
        s.push_str(" const u64 za = zinv_all[i & (B - 1)];\n");
    }
    if all {
        s.push_str(" q = e_add(q, e_mul_base(g_all, za));\n");
    }
    if tr {
        s.push_str(" q = e_add(q, e_mul_base(g_tr, f_mul(f_sub(x, g_inv), za)));\n");
    }
    if first && last {
        s.push_str(
            " const u64 d1 = f_sub(x, 1ull);\n const u64 d2 = f_sub(x, g_inv);\n\
             const u64 dinv = f_inv(f_mul(d1, d2));\n\
             q = e_add(q, e_mul_base(g_first, f_mul(dinv, d2)));\n\
             q = e_add(q, e_mul_base(g_last, f_mul(dinv, d1)));\n",
        );
    } else if first {
        s.push_str(" q = e_add(q, e_mul_base(g_first, f_inv(f_sub(x, 1ull))));\n");
    } else if last {
        s.push_str(" q = e_add(q, e_mul_base(g_last, f_inv(f_sub(x, g_inv))));\n");
    }
    s.push_str(" e_store(out, N, i, q);\n}\n");
}

pub(crate) const LOGUP_KERNEL: &str = "kiln_logup";

/// Offsets (u64) in the LogUp constant buffer: `z - tag_i` per
/// interaction, then alpha^1..alpha^max_arity, three words each.
pub(crate) fn logup_alpha_offset(logup: &LogUp) -> usize {
    3 * logup.interactions()
}

/// The LogUp kernel of one table's interactions: per trace row i, every
/// inverse column `h_j = 1 / (z - tag_j - sum_k alpha^(k+1) v_jk)` and the
/// row's term `sum_j m_j h_j` in the sum column, which the scan kernels
/// then turn into the running sum.
pub(crate) fn generate_logup(logup: &LogUp) -> String {
    let cs = &logup.eval;
    let cl = const_layout(cs);
    let mut s = String::from(kernels_cuda::FIELD_H);
    s.push_str(
        "\nextern \"C\" __global__ void kiln_logup(const u64* __restrict__ mainm, const u64* __restrict__ fixm,\n\
         const u64* __restrict__ cst, u64* out, u64 log_n) {\n\
         const u64 N = 1ull << log_n;\n const u64 mask = N - 1;\n\
         const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;\n if (i >= N) return;\n\
         const u64 B = 1ull;\n",
    );
    emit_nodes(&mut s, cs, &cl);
    let alphas = logup_alpha_offset(logup);
    s.push_str(" ext3 term = e_zero();\n");
    for j in 0..logup.interactions() {
        let first = logup.first_expr(j);
        let _ = writeln!(s, " {{\n  ext3 d = e_make(cst[{}], cst[{}], cst[{}]);", 3 * j, 3 * j + 1, 3 * j + 2);
        for k in 0..logup.arities[j] {
            let o = alphas + 3 * k;
            let v = cs.constraints[first + k].node;
            let _ = writeln!(s, "  d = e_sub(d, e_mul_base(e_make(cst[{o}], cst[{}], cst[{}]), v{v}));", o + 1, o + 2);
        }
        let m = cs.constraints[first + logup.arities[j]].node;
        let _ = writeln!(
            s,
            "  const ext3 h = e_inv(d);\n  e_store(out + {}ull * N, N, i, h);\n  term = e_add(term, e_mul_base(h, v{m}));\n }}",
            3 * j
        );
    }
    let _ = writeln!(s, " e_store(out + {}ull * N, N, i, term);\n}}", 3 * logup.interactions());
    s
}
