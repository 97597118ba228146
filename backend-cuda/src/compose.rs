//! Constraint composition: CUDA source generated from the constraint IR,
//! and the instruction list of the interpreter kernel.
//!
//! Each AIR's `ConstraintSystem` becomes a few straight-line kernels, each
//! for a run of its constraints of at most about [`PART_NODES`] nodes (one
//! thread per LDE row; every DAG node a register value, base-field nodes
//! with base arithmetic), compiled by NVRTC in parallel and cached on disk
//! by source hash, and run in order. Nodes that read no column (challenge
//! powers, `z - tag`) are computed once on the host and read from the
//! constant buffer.
//!
//! Generated is the default, chosen by measurement: on the H200 it beat
//! the interpreter on every AIR measured, by 1.1x to 2.9x (the VM's
//! tables, the stark examples; `benches/examples/compose_kernels.rs`, log
//! in docs/gpu). The interpreter pays a per-node dispatch, a value array
//! in local memory and its operand loads; the generated kernels pay one
//! NVRTC compilation per AIR and machine (cold, the slowest part: under a
//! second on the H200 for the VM's CPU table; then the disk cache).

use backend_api::analysis::{self, column_free_values, Analysis};
use backend_api::ir::{ConstraintDomain, ConstraintSystem, Leaf, Node};
use backend_api::{Ext, LogUp, F};
use std::fmt::Write;

pub(crate) const KERNEL: &str = "kiln_compose";

/// Where the constant buffer keeps each kind of value (u64 offsets).
pub(crate) struct ConstLayout {
    pub challenges: usize,
    pub aux_values: usize,
    pub publics: usize,
    pub alphas: usize,
    /// Per node: where its value is when it is hoisted, i.e. computed once
    /// on the host because it reads no column (powers of a challenge,
    /// `z - tag`, products of publics): three words, base values in the
    /// first.
    pub hoisted: Vec<Option<usize>>,
    pub len: usize,
}

/// The constant buffer's layout; with `hoist`, every live node that reads
/// no column (`backend_api::analysis`) gets a slot and leaves the per-row
/// work. The public values come last: the generated source names every
/// other offset, so statements of one AIR with different numbers of public
/// values (a VM program's inputs and outputs) share their kernels.
pub(crate) fn const_layout(cs: &ConstraintSystem, hoist: bool) -> ConstLayout {
    let l = &cs.layout;
    let challenges = 0;
    let aux_values = challenges + 3 * l.num_challenges;
    let alphas = aux_values + 3 * l.num_aux_values;
    let mut len = alphas + 3 * cs.constraints.len();
    let mut hoisted = vec![None; cs.nodes.len()];
    if hoist {
        let a = Analysis::new(cs);
        for (i, h) in hoisted.iter_mut().enumerate() {
            if a.hoisted[i] && a.live[i] {
                *h = Some(len);
                len += 3;
            }
        }
    }
    let publics = len;
    len += l.num_public;
    ConstLayout { challenges, aux_values, publics, alphas, hoisted, len }
}

/// The values of the hoisted nodes, by constant-buffer offset.
pub(crate) fn hoisted_values(
    cs: &ConstraintSystem,
    cl: &ConstLayout,
    challenges: &[Ext],
    publics: &[F],
    aux_values: &[Ext],
) -> Vec<(usize, Ext)> {
    let vals = column_free_values(cs, challenges, publics, aux_values);
    cl.hoisted.iter().zip(vals).filter_map(|(o, v)| Some(((*o)?, v?))).collect()
}

/// Most nodes one composition kernel computes per row. ptxas's time grows
/// faster than a kernel's length: on the H200 the VM's CPU table (431
/// nodes) took 3.7-5.1 s to compile as one kernel, its range table (24)
/// 0.37 s. So a system is split into parts of about this many nodes, each
/// a kernel of its own, compiled in parallel and run one after another.
const PART_NODES: usize = 96;

/// The composition kernels' sources (field header included), one per part
/// of the constraints ([`parts`]). The first part stores its quotient
/// values, every later one adds its own to them: field addition is exact,
/// so the sum is the same element whatever the split.
pub(crate) fn generate(cs: &ConstraintSystem) -> Vec<String> {
    let cl = const_layout(cs, true);
    let a = Analysis::new(cs);
    parts(cs, &a, &cl).iter().enumerate().map(|(p, ks)| generate_part(cs, &a, &cl, ks, p == 0)).collect()
}

/// One kernel: the nodes the constraints `ks` need, their sums per domain,
/// and the quotient they contribute, stored (`first`) or added.
fn generate_part(cs: &ConstraintSystem, a: &Analysis, cl: &ConstLayout, ks: &[usize], first: bool) -> String {
    let mut s = String::from(kernels_cuda::FIELD_H);
    s.push_str(
        "\nextern \"C\" __global__ void kiln_compose(const u64* __restrict__ mainm, const u64* __restrict__ auxm,\n\
         const u64* __restrict__ fixm, const u64* __restrict__ mainn, const u64* __restrict__ auxn,\n\
         const u64* __restrict__ fixn, const u64* __restrict__ cst, const u64* __restrict__ zinv_all,\n\
         const u64* __restrict__ tw, u64* out, u64 log_big, u64 log_blowup, u64 nb, u64 shift, u64 tw_log,\n\
         u64 g_inv, u64 log_stride) {\n\
         const u64 N = 1ull << log_big;\n const u64 mask = N - 1;\n const u64 NM = N << log_stride;\n\
         const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;\n if (i >= N) return;\n\
         const u64 B = 1ull << log_blowup;\n",
    );
    for (_, name) in GROUPS {
        let _ = writeln!(s, " e_acc {name}_sum = e_acc_zero();");
    }
    // Each domain's sum is an unreduced `e_acc` (three multiply-adds a
    // constraint instead of a reduced product and sum: 5.8 -> 5.1 ms for
    // the quotient round of the 64-column cubic AIR on the H200).
    // Each constraint joins its domain's sum right after its node, so its
    // value (and what only it reads) need not stay live to the end: on the
    // H200 the VM's CPU table composed in 8.7 ms instead of 12.9 ms (the
    // 64-column cubic AIR in 6.5 ms instead of 5.5 ms).
    let mut roots: Vec<Vec<usize>> = vec![Vec::new(); cs.nodes.len()];
    for &k in ks {
        roots[cs.constraints[k].node as usize].push(k);
    }
    let mut live = vec![false; cs.nodes.len()];
    for &k in ks {
        mark_cone(cs, a, cl, cs.constraints[k].node as usize, &mut live);
    }
    emit_nodes(&mut s, cs, a, cl, &live, &mut |s, node| {
        for &k in &roots[node] {
            let c = &cs.constraints[k];
            let name = GROUPS.iter().find(|g| g.0 == c.domain).map(|g| g.1).expect("all domains listed");
            let o = cl.alphas + 3 * k;
            let _ = writeln!(s, " k_acc({name}_sum, e_make(cst[{o}], cst[{}], cst[{}]), v{node});", o + 1, o + 2);
        }
    });
    for (_, name) in GROUPS {
        let _ = writeln!(s, " const ext3 {name} = e_acc_reduce({name}_sum);");
    }
    let domains: Vec<ConstraintDomain> = ks.iter().map(|&k| cs.constraints[k].domain).collect();
    emit_quotient(&mut s, &domains, first);
    // Closes the body the header opened (here, so each function's braces pair up).
    s.push_str("}\n");
    s
}

/// The constraints in runs whose kernels need at most [`PART_NODES`]
/// nodes ([`analysis::parts`]).
fn parts(cs: &ConstraintSystem, a: &Analysis, cl: &ConstLayout) -> Vec<Vec<usize>> {
    analysis::parts(cs, PART_NODES, &|i| a.hoisted[i] && cl.hoisted[i].is_some())
}

/// Marks live the nodes `root` needs per row that are not live yet (a
/// node with a constant-buffer slot needs nothing below it); returns how
/// many it marked.
fn mark_cone(cs: &ConstraintSystem, a: &Analysis, cl: &ConstLayout, root: usize, live: &mut [bool]) -> usize {
    analysis::mark_cone(cs, root, &|i| a.hoisted[i] && cl.hoisted[i].is_some(), live)
}

/// The constraint domains and the names of their sums in the kernel.
const GROUPS: [(ConstraintDomain, &str); 4] = [
    (ConstraintDomain::AllRows, "g_all"),
    (ConstraintDomain::Transition, "g_tr"),
    (ConstraintDomain::FirstRow, "g_first"),
    (ConstraintDomain::LastRow, "g_last"),
];

/// Every `live` node, as a register value `v{node}` (base-field nodes with
/// base arithmetic). Trace leaves read point i of `mainm`, `fixm` or `auxm`
/// at offset 0, point `(i + offset * nb) & mask` of `mainn`, `fixn` or
/// `auxn` past it: the same matrices with nb = B on a whole LDE coset, the
/// next rows with nb = 0 on a piece given them. Point p is row p <<
/// log_stride of columns of NM rows; every kernel that emits nodes
/// declares N, NM, mask, nb and log_stride. Challenges, auxiliary values
/// and publics come from `cst`.
fn emit_nodes(
    s: &mut String,
    cs: &ConstraintSystem,
    a: &Analysis,
    cl: &ConstLayout,
    live: &[bool],
    after: &mut dyn FnMut(&mut String, usize),
) {
    let is_base = &a.is_base;
    let matrix = |name: &str, offset: u32| format!("{name}{}", if offset == 0 { 'm' } else { 'n' });
    let row = |offset: u32| match offset {
        0 => "(i << log_stride)".to_string(),
        _ => format!("(((i + {offset}ull * nb) & mask) << log_stride)"),
    };
    for (idx, node) in cs.nodes.iter().enumerate() {
        if !live[idx] {
            continue;
        }
        let ty = if is_base[idx] { "u64" } else { "ext3" };
        if let Some(o) = cl.hoisted[idx] {
            let expr = if is_base[idx] {
                format!("cst[{o}]")
            } else {
                format!("e_make(cst[{o}], cst[{}], cst[{}])", o + 1, o + 2)
            };
            let _ = writeln!(s, " const {ty} v{idx} = {expr};");
            after(s, idx);
            continue;
        }
        let expr = match *node {
            Node::Leaf(Leaf::Const(v)) => format!("{}ull", v.value()),
            Node::Leaf(Leaf::Main { col, offset }) => {
                format!("{}[{col}ull * NM + {}]", matrix("main", offset), row(offset))
            }
            Node::Leaf(Leaf::Fixed { col, offset }) => {
                format!("{}[{col}ull * NM + {}]", matrix("fix", offset), row(offset))
            }
            Node::Leaf(Leaf::Aux { col, offset }) => {
                format!("e_load({} + {}ull * NM, NM, {})", matrix("aux", offset), 3 * col as u64, row(offset))
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
        after(s, idx);
    }
}

/// Divides each domain's sum by its vanishing polynomial at x and stores
/// the quotient at row i (`first`), or adds it to what is there; the
/// caller closes the kernel's body.
fn emit_quotient(s: &mut String, domains: &[ConstraintDomain], first: bool) {
    let has = |d: ConstraintDomain| domains.contains(&d);
    s.push_str(" ext3 q = e_zero();\n");
    let (all, tr, first_row, last_row) = (
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
    if first_row && last_row {
        s.push_str(
            " const u64 d1 = f_sub(x, 1ull);\n const u64 d2 = f_sub(x, g_inv);\n\
             const u64 dinv = f_inv(f_mul(d1, d2));\n\
             q = e_add(q, e_mul_base(g_first, f_mul(dinv, d2)));\n\
             q = e_add(q, e_mul_base(g_last, f_mul(dinv, d1)));\n",
        );
    } else if first_row {
        s.push_str(" q = e_add(q, e_mul_base(g_first, f_inv(f_sub(x, 1ull))));\n");
    } else if last_row {
        s.push_str(" q = e_add(q, e_mul_base(g_last, f_inv(f_sub(x, g_inv))));\n");
    }
    if first {
        s.push_str(" e_store(out, N, i, q);\n");
    } else {
        s.push_str(" e_store(out, N, i, e_add(e_load(out, N, i), q));\n");
    }
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
    let cl = const_layout(cs, false);
    let mut s = String::from(kernels_cuda::FIELD_H);
    s.push_str(
        "\nextern \"C\" __global__ void kiln_logup(const u64* __restrict__ mainm, const u64* __restrict__ fixm,\n\
         const u64* __restrict__ cst, u64* out, u64 log_n) {\n\
         const u64 N = 1ull << log_n;\n const u64 mask = N - 1;\n\
         const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;\n if (i >= N) return;\n\
         const u64* mainn = mainm;\n const u64* fixn = fixm;\n const u64 nb = 1ull;\n\
         const u64 log_stride = 0;\n const u64 NM = N;\n",
    );
    let a = Analysis::new(cs);
    let mut live = vec![false; cs.nodes.len()];
    for c in &cs.constraints {
        mark_cone(cs, &a, &cl, c.node as usize, &mut live);
    }
    emit_nodes(&mut s, cs, &a, &cl, &live, &mut |_, _| {});
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
    let _ = writeln!(s, " e_store(out + {}ull * N, N, i, term);", 3 * logup.interactions());
    s.push_str("}\n");
    s
}

/// An instruction list for the `compose_interp` kernel (two words each) and
/// the bit set of constraint domains present (1 all rows, 2 transition,
/// 4 first row, 8 last row); `None` when the system needs more value slots
/// than the kernel has. Each constraint is accumulated right after its
/// node, and a slot is reused once its value's last reader has run (field
/// addition is exact, so the order of the sums does not change a bit).
pub(crate) fn interpreter_program(cs: &ConstraintSystem) -> Option<(Vec<u64>, u64)> {
    const OP_CONST: u64 = 0;
    const OP_MAIN: u64 = 1;
    const OP_FIXED: u64 = 2;
    const OP_AUX: u64 = 3;
    const OP_CST_EXT: u64 = 4;
    const OP_CST_BASE: u64 = 5;
    const OP_ACC: u64 = 16;
    let cl = const_layout(cs, true);
    let a = Analysis::new(cs);
    let is_base = &a.is_base;
    let n = cs.nodes.len();
    let roots = &a.roots;
    // Last reader of each node (itself when only a constraint reads it);
    // nodes nothing reads are skipped.
    let last = &a.last_use;
    let domain_bit = |d: ConstraintDomain| match d {
        ConstraintDomain::AllRows => 0u64,
        ConstraintDomain::Transition => 1,
        ConstraintDomain::FirstRow => 2,
        ConstraintDomain::LastRow => 3,
    };
    let mut free: Vec<u64> = (0..kernels_cuda::INTERP_SLOTS as u64).rev().collect();
    let mut slot = vec![0u64; n];
    let readers_done = a.released_at();
    let mut prog = Vec::new();
    let mut domains = 0u64;
    let word = |op: u64, d: u64, a: u64, b: u64| op | d << 8 | a << 24 | b << 40;
    for i in 0..n {
        if last[i].is_none() {
            continue;
        }
        let s = |x: u32| slot[x as usize];
        let (op, a, b, imm) = match cs.nodes[i] {
            _ if cl.hoisted[i].is_some() => {
                let o = cl.hoisted[i].expect("hoisted") as u64;
                (if is_base[i] { OP_CST_BASE } else { OP_CST_EXT }, 0, 0, o)
            }
            Node::Leaf(Leaf::Const(v)) => (OP_CONST, 0, 0, v.value()),
            Node::Leaf(Leaf::Main { col, offset }) => (OP_MAIN, 0, 0, col as u64 | (offset as u64) << 32),
            Node::Leaf(Leaf::Fixed { col, offset }) => (OP_FIXED, 0, 0, col as u64 | (offset as u64) << 32),
            Node::Leaf(Leaf::Aux { col, offset }) => (OP_AUX, 0, 0, col as u64 | (offset as u64) << 32),
            Node::Leaf(Leaf::Challenge(k)) => (OP_CST_EXT, 0, 0, (cl.challenges + 3 * k as usize) as u64),
            Node::Leaf(Leaf::AuxValue(k)) => (OP_CST_EXT, 0, 0, (cl.aux_values + 3 * k as usize) as u64),
            Node::Leaf(Leaf::Public(k)) => (OP_CST_BASE, 0, 0, (cl.publics + k as usize) as u64),
            Node::Add(x, y) => (if is_base[i] { 6 } else { 7 }, s(x), s(y), 0),
            Node::Sub(x, y) => (if is_base[i] { 8 } else { 9 }, s(x), s(y), 0),
            Node::Mul(x, y) => {
                let op = match (is_base[x as usize], is_base[y as usize]) {
                    (true, true) => 10,
                    (false, true) => 11,
                    (true, false) => 12,
                    (false, false) => 13,
                };
                (op, s(x), s(y), 0)
            }
            Node::Neg(x) => (if is_base[i] { 14 } else { 15 }, s(x), 0, 0),
        };
        // Operands read for the last time here give their slots back
        // before the result takes one (the kernel reads before it writes).
        for &done in &readers_done[i] {
            if done != i {
                free.push(slot[done]);
            }
        }
        let d = free.pop()?;
        slot[i] = d;
        prog.extend([word(op, d, a, b), imm]);
        for &k in &roots[i] {
            let c = &cs.constraints[k];
            domains |= 1 << domain_bit(c.domain);
            let alpha = (cl.alphas + 3 * k) as u64;
            prog.extend([word(OP_ACC, 0, d, 0), domain_bit(c.domain) | alpha << 2]);
        }
        if last[i] == Some(i) {
            free.push(d);
        }
    }
    Some((prog, domains))
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_api::{ConstraintBuilder, Expr, Ext, Layout, F};

    /// Runs an instruction list as the kernel does, on one row whose leaves
    /// are given by `leaf`, returning the four domain sums.
    fn run(prog: &[u64], cst: &[F], leaf: &dyn Fn(u64, u64) -> Ext) -> [Ext; 4] {
        let mut slot = [Ext::ZERO; kernels_cuda::INTERP_SLOTS];
        let mut g = [Ext::ZERO; 4];
        for ins in prog.chunks(2) {
            let (w, imm) = (ins[0], ins[1]);
            let (op, d, a, b) = (w & 0xff, (w >> 8) & 0xffff, (w >> 24) & 0xffff, (w >> 40) & 0xffff);
            let (sa, sb) = (slot[a as usize], slot[b as usize]);
            let c3 = |k: u64| Ext::new(cst[k as usize], cst[k as usize + 1], cst[k as usize + 2]);
            let r = match op {
                0 => Ext::from_base(F::new(imm)),
                1..=3 => leaf(op, imm),
                4 => c3(imm),
                5 => Ext::from_base(cst[imm as usize]),
                6 | 7 => sa + sb,
                8 | 9 => sa - sb,
                10..=13 => sa * sb,
                14 | 15 => -sa,
                _ => {
                    g[(imm & 3) as usize] += c3(imm >> 2) * sa;
                    continue;
                }
            };
            slot[d as usize] = r;
        }
        g
    }

    #[test]
    fn statements_with_more_public_values_share_the_kernel() {
        // The VM's tables differ between programs only in how many public
        // values the statement has (its inputs and outputs).
        let system = |num_public| {
            let layout = Layout { main_width: 2, num_challenges: 1, num_public, ..Layout::default() };
            let mut b = ConstraintBuilder::new(layout);
            b.when_transition(Expr::main(1, 1) - Expr::main(0, 0) * Expr::challenge(0));
            b.when_first_row(Expr::main(0, 0) - Expr::public(1));
            b.always(Expr::main(1, 0) * (Expr::main(1, 0) - Expr::public(0) * Expr::challenge(0)));
            b.build().unwrap()
        };
        let (few, many) = (system(2), system(9));
        assert_eq!(generate(&few), generate(&many));
        assert!(const_layout(&few, true).len < const_layout(&many, true).len);
    }

    #[test]
    fn the_interpreter_program_sums_every_constraint_in_its_domain() {
        let layout =
            Layout { fixed_width: 1, main_width: 3, aux_width: 2, num_challenges: 2, num_public: 2, num_aux_values: 1 };
        let mut b = ConstraintBuilder::new(layout);
        let m = |c, o| Expr::main(c, o);
        // Deep enough that slots must be reused, with shared subterms.
        let mut t = m(0, 0);
        for k in 0..150u64 {
            t = &t * (m(1, 0) + Expr::from_u64(k)) - m(2, 1) * Expr::fixed(0, 0);
            if k % 10 == 0 {
                b.always(&t * Expr::challenge(0) - Expr::aux(1, 1));
            }
        }
        b.when_transition(m(0, 1) - m(0, 0) * m(1, 0) - Expr::public(1));
        b.when_first_row(Expr::aux(0, 0) - Expr::aux_value(0) * Expr::challenge(1));
        b.when_last_row(-(m(2, 0) * m(2, 0)) + Expr::public(0));
        let cs = b.build().unwrap();
        let (prog, domains) = interpreter_program(&cs).expect("fits the slots");
        assert_eq!(domains, 0b1111);
        let cl = const_layout(&cs, true);
        assert!(cl.hoisted.iter().any(Option::is_some), "the system has a node that reads no column");
        let mut cst: Vec<F> = (0..cl.len as u64).map(|i| F::new(i * i + 7)).collect();
        let c3 = |cst: &[F], k: usize| Ext::new(cst[k], cst[k + 1], cst[k + 2]);
        let challenges = [c3(&cst, cl.challenges), c3(&cst, cl.challenges + 3)];
        let aux_values = [c3(&cst, cl.aux_values)];
        let publics = [cst[cl.publics], cst[cl.publics + 1]];
        for (o, v) in hoisted_values(&cs, &cl, &challenges, &publics, &aux_values) {
            cst[o..o + 3].copy_from_slice(&v.0);
        }
        let val = |kind: u64, col: u64, off: u64| {
            Ext::new(F::new(kind * 1000 + col * 10 + off + 1), F::new(col + 3), F::new(off + kind))
        };
        let leaf = |op: u64, imm: u64| {
            let (col, off) = (imm & 0xffff_ffff, imm >> 32);
            match op {
                1 | 2 => Ext::from_base(val(op, col, off).0[0]),
                _ => val(op, col, off),
            }
        };
        let got = run(&prog, &cst, &leaf);
        let c3 = |k: usize| c3(&cst, k);
        let values = cs.eval(|l| match *l {
            Leaf::Const(c) => Ext::from_base(c),
            Leaf::Main { col, offset } => leaf(1, col as u64 | (offset as u64) << 32),
            Leaf::Fixed { col, offset } => leaf(2, col as u64 | (offset as u64) << 32),
            Leaf::Aux { col, offset } => leaf(3, col as u64 | (offset as u64) << 32),
            Leaf::Challenge(k) => c3(cl.challenges + 3 * k as usize),
            Leaf::AuxValue(k) => c3(cl.aux_values + 3 * k as usize),
            Leaf::Public(k) => Ext::from_base(cst[cl.publics + k as usize]),
        });
        let mut want = [Ext::ZERO; 4];
        for (k, (c, v)) in cs.constraints.iter().zip(values).enumerate() {
            let d = match c.domain {
                ConstraintDomain::AllRows => 0,
                ConstraintDomain::Transition => 1,
                ConstraintDomain::FirstRow => 2,
                ConstraintDomain::LastRow => 3,
            };
            want[d] += c3(cl.alphas + 3 * k) * v;
        }
        assert_eq!(got, want);
        // Far fewer slots than nodes: values are dropped after their last use.
        assert!(cs.nodes.len() > 2 * kernels_cuda::INTERP_SLOTS);
    }

    #[test]
    fn a_large_system_splits_into_bounded_parts_covering_every_constraint_once() {
        use stark::Air;
        let cubic = stark::examples::Cubic::new(64);
        let cs = cubic.constraints();
        let (cl, a) = (const_layout(cs, true), Analysis::new(cs));
        let split = parts(cs, &a, &cl);
        assert!(split.len() > 2, "{} nodes in {} part(s)", cs.nodes.len(), split.len());
        let order: Vec<usize> = split.concat();
        assert_eq!(order, (0..cs.constraints.len()).collect::<Vec<_>>());
        for ks in &split {
            let mut live = vec![false; cs.nodes.len()];
            let nodes: usize =
                ks.iter().map(|&k| mark_cone(cs, &a, &cl, cs.constraints[k].node as usize, &mut live)).sum();
            assert!(nodes <= PART_NODES || ks.len() == 1, "a part of {} constraints needs {nodes} nodes", ks.len());
        }
        // Only the first kernel stores; the others add to what it stored.
        let sources = generate(cs);
        assert_eq!(sources.len(), split.len());
        let store = " e_store(out, N, i, q);";
        let add = " e_store(out, N, i, e_add(e_load(out, N, i), q));";
        assert!(sources[0].contains(store) && !sources[0].contains(add));
        assert!(sources[1..].iter().all(|s| s.contains(add) && !s.contains(store)));
    }

    /// NVRTC is not on CI: what the generated leaves read must be declared
    /// by each kernel that emits them, composition and LogUp alike.
    #[test]
    fn every_kernel_declares_the_names_its_leaves_read() {
        use stark::Air;
        let cubic = stark::examples::Cubic::new(4);
        let perm = stark::examples::Permutation::default();
        let logup = perm.logup().expect("a bus table");
        let sources = generate(cubic.constraints()).into_iter().chain([generate_logup(logup)]);
        for src in sources {
            assert!(src.contains("[0ull * NM + (i << log_stride)]"), "no leaf read found");
            for decl in ["u64 N ", "u64 NM ", "u64 mask ", "u64 nb", "u64 log_stride"] {
                assert!(src.contains(decl), "`{decl}` not declared in:\n{src}");
            }
        }
    }

    #[test]
    fn a_small_system_is_one_kernel_with_every_constraint() {
        let layout = Layout { main_width: 2, num_challenges: 1, num_public: 1, ..Layout::default() };
        let mut b = ConstraintBuilder::new(layout);
        b.when_transition(Expr::main(1, 1) - Expr::main(0, 0) * Expr::challenge(0));
        b.when_first_row(Expr::main(0, 0) - Expr::public(0));
        let cs = b.build().unwrap();
        let sources = generate(&cs);
        assert_eq!(sources.len(), 1);
        let cl = const_layout(&cs, true);
        for k in 0..cs.constraints.len() {
            assert!(sources[0].contains(&format!("cst[{}]", cl.alphas + 3 * k)), "constraint {k} is not summed");
        }
    }
}
