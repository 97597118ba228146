//! Constraint composition: CUDA source generated from the constraint IR.
//!
//! Each AIR's `ConstraintSystem` becomes one straight-line kernel (one
//! thread per LDE row; every DAG node a register value, base-field nodes
//! with base arithmetic), compiled by NVRTC once and cached on disk by its
//! source hash. Against an interpreter kernel this removes the per-node
//! dispatch, the value stack in local memory and the operand loads; the
//! price is one NVRTC compilation per AIR (cached across runs).

use backend_api::ir::{ConstraintDomain, ConstraintSystem, Leaf, Node};
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
    let mut s = String::from(kernels_cuda::FIELD_H);
    s.push_str(
        "\nextern \"C\" __global__ void kiln_compose(const u64* __restrict__ mainm, const u64* __restrict__ auxm,\n\
         const u64* __restrict__ fixm, const u64* __restrict__ cst, const u64* __restrict__ zinv_all,\n\
         const u64* __restrict__ tw, u64* out, u64 log_big, u64 log_blowup, u64 shift, u64 tw_log, u64 g_inv) {\n\
         const u64 N = 1ull << log_big;\n const u64 mask = N - 1;\n\
         const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;\n if (i >= N) return;\n\
         const u64 B = 1ull << log_blowup;\n",
    );
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
    s
}
